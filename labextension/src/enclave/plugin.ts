/**
 * The Enclave sidebar plugin: the sidebar (left area), the running-audits status-bar
 * item, palette commands (open sidebar, new audit request, refresh) and the launcher's
 * "New audit request" card. A finished audit's certificate is fetched through the
 * server extension, saved as ``certificates/<audit>.dsse.json`` with its certificate
 * bundle (the envelope with the proofs of its ledger entries) beside it as
 * ``certificates/<audit>.bundle.json``, and opened in the certificate viewer, where
 * Verify runs in the browser and on the server; a release report likewise, as
 * ``reports/<report>.dsse.json`` with its report bundle (the proof of its ledger entry
 * and every member certificate's bundle) beside it as ``reports/<report>.bundle.json``.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ILauncher } from '@jupyterlab/launcher';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';

import { FACTORY } from '../constants';
import { PLUGIN_ID } from '../trustedKey';
import { call } from './api';
import { AuditTracker } from './audits';
import { EnclaveSidebar } from './sidebar';
import { RunningAuditsItem } from './statusItem';

export namespace SidebarCommandIDs {
  export const open = 'replay-enclave:open-sidebar';
  export const newRequest = 'replay-enclave:new-audit-request';
  export const refresh = 'replay-enclave:refresh';
}

const CATEGORY = 'Replay Enclave';
const FOLDER = 'certificates';
const REPORT_FOLDER = 'reports';

export const enclaveIcon = new LabIcon({
  name: 'replay-enclave:enclave',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path class="jp-icon3" fill="#616161" ' +
    'd="M12 2 4 5v6c0 5 3.4 9.6 8 11 4.6-1.4 8-6 8-11V5l-8-3zm-1 14-4-4 1.4-1.4L11 13.2l4.6-4.6L17 10l-6 6z"/></svg>'
});

export const enclaveSidebar: JupyterFrontEndPlugin<void> = {
  id: 'replay-enclave:sidebar',
  description: 'The Enclave sidebar, the running-audits status item, commands and a launcher card.',
  autoStart: true,
  optional: [ICommandPalette, ILauncher, IStatusBar, ILayoutRestorer, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    statusBar: IStatusBar | null,
    restorer: ILayoutRestorer | null,
    registry: ISettingRegistry | null
  ) => {
    const contents = app.serviceManager.contents;

    const saveJson = async (path: string, value: unknown): Promise<void> => {
      await contents.save(path, { type: 'file', format: 'text', content: JSON.stringify(value, null, 2) });
    };

    /** The envelope at ``route``, saved as ``folder/<id>.dsse.json`` and opened; with
     * ``withBundle``, the JSON at ``route/<id>/bundle`` is saved first, beside it, as
     * ``folder/<id>.bundle.json``. A failed fetch rejects before anything is saved. */
    async function openEnvelope(route: string, folder: string, id: string, withBundle = false): Promise<void> {
      const at = `${route}/${encodeURIComponent(id)}`;
      const envelope = await call<unknown>('GET', at);
      const bundle = withBundle ? await call<unknown>('GET', `${at}/bundle`) : null;
      try {
        await contents.get(folder, { content: false });
      } catch {
        await contents.save(folder, { type: 'directory' });
      }
      if (withBundle) {
        await saveJson(`${folder}/${id}.bundle.json`, bundle);
      }
      const path = `${folder}/${id}.dsse.json`;
      await saveJson(path, envelope);
      await app.commands.execute('docmanager:open', { path, factory: FACTORY });
    }
    const openCertificate = (auditId: string): Promise<void> => openEnvelope('certificates', FOLDER, auditId, true);
    const openReport = (reportId: string): Promise<void> => openEnvelope('reports', REPORT_FOLDER, reportId, true);

    const audits = new AuditTracker();
    const sidebar = new EnclaveSidebar(audits, openCertificate, openReport);
    sidebar.title.icon = enclaveIcon;
    app.shell.add(sidebar, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(sidebar, sidebar.id);
    }
    // the page size is a setting of the extension's one settings plugin
    const settings = registry ? registry.load(PLUGIN_ID) : Promise.resolve(null);
    let loaded: Promise<void> | null = null;
    const ensureLoaded = (): Promise<void> =>
      (loaded ??= settings.then(s => {
        const size = Number(s?.get('sidebarPageSize').composite ?? 10);
        sidebar.pageSize = Number.isInteger(size) && size >= 1 && size <= 500 ? size : 10;
        sidebar.reports.pageSize = sidebar.pageSize;
        return sidebar.refresh();
      }));
    // the status bar's count is worth knowing before the sidebar is opened: one page of
    // audits at start-up, then polling only while something runs
    void app.restored.then(() => ensureLoaded());

    const open = (): void => {
      app.shell.activateById(sidebar.id);
      void ensureLoaded();
    };

    app.commands.addCommand(SidebarCommandIDs.open, {
      label: 'Open the Enclave sidebar',
      caption: 'Who am I, specimens, audits and the request form',
      icon: enclaveIcon,
      execute: open
    });
    app.commands.addCommand(SidebarCommandIDs.newRequest, {
      label: args => (args.isLauncher ? 'New audit request' : 'New audit request…'),
      caption: 'Request a replay audit of a sealed specimen',
      icon: enclaveIcon,
      execute: async () => {
        open();
        await ensureLoaded();
        sidebar.showForm(true);
      }
    });
    app.commands.addCommand(SidebarCommandIDs.refresh, {
      label: 'Refresh the Enclave sidebar',
      caption: 'Reload who am I, specimens, policies, audits and release reports',
      execute: async () => {
        await ensureLoaded();
        loaded = sidebar.refresh();
        await loaded;
      }
    });
    if (palette) {
      for (const command of Object.values(SidebarCommandIDs)) {
        palette.addItem({ command, category: CATEGORY });
      }
    }
    if (launcher) {
      launcher.add({ command: SidebarCommandIDs.newRequest, category: CATEGORY, rank: 1 });
    }
    if (statusBar) {
      const item = new RunningAuditsItem(audits, open);
      statusBar.registerStatusItem('replay-enclave:running-audits', { item, align: 'left', rank: 5 });
    }
  }
};
