/**
 * Replay Enclave in JupyterLab. Each plugin is one concern: the certificate viewer here,
 * the Enclave sidebar (with its request form, status-bar item and commands) in
 * ``enclave/plugin.ts``.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, InputDialog, WidgetTracker } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { enclaveSidebar } from './enclave/plugin';
import { PLUGIN_ID, TrustedKeySource } from './trustedKey';
import { shareTrustedKeys } from './verify/both';
import {
  BUNDLE_FILE_TYPE,
  BUNDLE_FILE_TYPE_SPEC,
  CERTIFICATE_FILE_TYPE,
  CertificateFactory,
  FACTORY,
  FILE_TYPE
} from './viewer/factory';
import { CertificateDocument } from './viewer/widget';

export namespace CommandIDs {
  export const verify = 'replay-enclave:verify-certificate';
  export const setKey = 'replay-enclave:set-trusted-key';
}

const CATEGORY = 'Replay Enclave';

function isCertificatePath(path: string | undefined): path is string {
  return typeof path === 'string' && /\.(dsse|bundle)\.json$/.test(path);
}

const certificateViewer: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Opens *.dsse.json certificates (and *.bundle.json certificate bundles) and verifies them in the browser and on the server.',
  autoStart: true,
  optional: [ISettingRegistry, ICommandPalette, IDefaultFileBrowser, ILayoutRestorer],
  activate: async (
    app: JupyterFrontEnd,
    registry: ISettingRegistry | null,
    palette: ICommandPalette | null,
    browser: IDefaultFileBrowser | null,
    restorer: ILayoutRestorer | null
  ) => {
    const settings = registry ? await registry.load(PLUGIN_ID) : null;
    const keys = new TrustedKeySource(settings, app.serviceManager.contents);
    shareTrustedKeys(keys); // for Verify in notebook outputs (the MIME renderer)

    app.docRegistry.addFileType(CERTIFICATE_FILE_TYPE);
    app.docRegistry.addFileType(BUNDLE_FILE_TYPE_SPEC);
    const factory = new CertificateFactory(
      {
        name: FACTORY,
        label: 'Certificate',
        fileTypes: [FILE_TYPE, BUNDLE_FILE_TYPE],
        defaultFor: [FILE_TYPE, BUNDLE_FILE_TYPE],
        readOnly: true
      },
      keys
    );
    app.docRegistry.addWidgetFactory(factory);

    const tracker = new WidgetTracker<CertificateDocument>({ namespace: 'replay-enclave-certificate' });
    factory.widgetCreated.connect((_, widget) => {
      widget.context.pathChanged.connect(() => void tracker.save(widget));
      void tracker.add(widget);
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: 'docmanager:open',
        args: widget => ({ path: widget.context.path, factory: FACTORY }),
        name: widget => widget.context.path
      });
    }

    const selectedPath = (): string | undefined => {
      const item = browser?.selectedItems().next();
      return item && !item.done ? item.value.path : undefined;
    };

    app.commands.addCommand(CommandIDs.verify, {
      label: 'Verify certificate',
      caption: 'Verify a Replay Enclave certificate in the browser and on the server',
      isEnabled: () =>
        tracker.currentWidget !== null || isCertificatePath(selectedPath()),
      execute: async args => {
        // the file browser's context menu names its selection; the palette means the
        // certificate in front of the analyst, else the file browser's selection
        const asked =
          typeof args.path === 'string' ? args.path : args.fromFileBrowser ? selectedPath() : undefined;
        let widget: CertificateDocument | null = null;
        if (asked === undefined && tracker.currentWidget && app.shell.currentWidget === tracker.currentWidget) {
          widget = tracker.currentWidget;
        } else {
          const path = asked ?? selectedPath() ?? tracker.currentWidget?.context.path;
          if (!isCertificatePath(path)) {
            return;
          }
          widget = (await app.commands.execute('docmanager:open', {
            path,
            factory: FACTORY
          })) as CertificateDocument;
        }
        app.shell.activateById(widget.id);
        await widget.content.verify();
      }
    });

    app.commands.addCommand(CommandIDs.setKey, {
      label: 'Set trusted certificate issuer key…',
      caption: 'Point to the issuer public key (.pub / .pem) used to verify certificates',
      execute: async () => {
        const answer = await InputDialog.getText({
          title: 'Trusted issuer key',
          label: 'Path of the issuer public key (PEM), relative to the Jupyter root',
          text: keys.path
        });
        if (answer.button.accept && answer.value !== null) {
          await keys.setPath(answer.value.trim());
        }
      }
    });

    app.contextMenu.addItem({
      command: CommandIDs.verify,
      args: { fromFileBrowser: true },
      selector: `.jp-DirListing-item[data-file-type="${FILE_TYPE}"]`,
      rank: 3
    });
    app.contextMenu.addItem({
      command: CommandIDs.verify,
      args: { fromFileBrowser: true },
      selector: `.jp-DirListing-item[data-file-type="${BUNDLE_FILE_TYPE}"]`,
      rank: 3
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.verify, category: CATEGORY });
      palette.addItem({ command: CommandIDs.setKey, category: CATEGORY });
    }
  }
};

export default [certificateViewer, enclaveSidebar];
