/**
 * The Enclave sidebar: who am I, specimens (filter, cursor paging, metadata only), the
 * request form, the analyst's audits with live status, cancel and the certificate, and
 * the tenant's release reports.
 * Everything comes through the server extension; nothing here can hold payload content
 * because none of these routes carries any.
 */

import { Widget } from '@lumino/widgets';

import { el } from '../certificate/dom';
import { AuditStatus, call, Page, SpecimenSummary, TERMINAL, WhoAmI } from './api';
import { AuditTracker } from './audits';
import { errorLine, section } from './parts';
import { ReportList } from './reports';
import { RequestForm } from './form';


export class EnclaveSidebar extends Widget {
  readonly form: RequestForm;
  readonly reports: ReportList;
  private readonly whoami = el('dl', { class: 'enclave-sb-whoami' });
  private readonly agent = el('input', { class: 'enclave-sb-agent', type: 'search', placeholder: 'agent name', 'aria-label': 'Filter specimens by agent' });
  private readonly auditability = el(
    'select',
    { class: 'enclave-sb-auditability', 'aria-label': 'Filter specimens by auditability' },
    el('option', { value: '' }, 'any auditability'),
    el('option', { value: 'counterfactual-admissible' }, 'counterfactual-admissible'),
    el('option', { value: 'observable-only' }, 'observable-only')
  );
  private readonly specimenRows = el('tbody');
  private readonly specimenCount = el('p', { class: 'enclave-sb-count', 'aria-live': 'polite' });
  private readonly moreSpecimens = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-more-specimens', type: 'button' }, 'More specimens');
  private readonly specimenError = el('div', { class: 'enclave-sb-specimen-error' });
  private readonly auditList = el('ul', { class: 'enclave-sb-audits', 'aria-label': 'Audits' });
  private readonly auditCount = el('p', { class: 'enclave-sb-count' });
  private readonly moreAudits = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-more-audits', type: 'button' }, 'More audits');
  private readonly auditError = el('div', { class: 'enclave-sb-audit-error', 'aria-live': 'polite' });
  private readonly formSection: HTMLElement;
  private specimenIds: string[] = [];
  private cursor: string | null = null;
  // the latest specimen list asked for: an answer to an earlier one is dropped, so a slow
  // answer to an old filter cannot overwrite the newer one's list
  private specimenAsk = 0;
  /** Specimens per page (the ``sidebarPageSize`` setting). */
  pageSize = 10;

  constructor(
    readonly audits: AuditTracker,
    private readonly openCertificate: (auditId: string) => Promise<void>,
    openReport: (reportId: string) => Promise<void>
  ) {
    super();
    this.id = 'replay-enclave-sidebar';
    this.addClass('enclave-sidebar');
    this.title.caption = 'Replay Enclave';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Replay Enclave');
    this.form = new RequestForm(status => this.audits.update(status));
    this.reports = new ReportList(openReport);
    this.formSection = el('div', { class: 'enclave-sb-form-slot', hidden: '' });
    const filters = el('form', { class: 'enclave-sb-filters', role: 'search', 'aria-label': 'Filter specimens' }, this.agent, this.auditability,
      el('button', { class: 'jp-Button jp-mod-styled', type: 'submit' }, 'Filter'));
    filters.addEventListener('submit', event => {
      event.preventDefault();
      void this.loadSpecimens(false);
    });
    this.auditability.addEventListener('change', () => void this.loadSpecimens(false));
    this.moreSpecimens.addEventListener('click', () => void this.loadSpecimens(true));
    this.moreAudits.addEventListener('click', () => void this.audits.more().catch(e => this.auditError.replaceChildren(errorLine(e))));
    const newRequest = el('button', { class: 'jp-Button jp-mod-styled jp-mod-accept enclave-sb-new-request', type: 'button', 'aria-expanded': 'false' }, 'New audit request');
    newRequest.addEventListener('click', () => this.showForm(this.formSection.hidden));
    const refresh = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-refresh', type: 'button' }, 'Refresh');
    refresh.addEventListener('click', () => void this.refresh());
    this.node.append(
      el('header', { class: 'enclave-sb-header' }, el('h2', {}, 'Replay Enclave'), refresh),
      section('Who am I', 'enclave-sb-who', this.whoami),
      section(
        'Specimens',
        'enclave-sb-specimens',
        filters,
        el('table', { class: 'enclave-sb-table', 'aria-label': 'Specimens (metadata only)' },
          el('thead', {}, el('tr', {}, ...['Specimen', 'Agent', 'Classification'].map(h => el('th', { scope: 'col' }, h)))),
          this.specimenRows),
        this.specimenCount,
        this.moreSpecimens,
        this.specimenError
      ),
      el('div', { class: 'enclave-sb-request' }, newRequest),
      this.formSection,
      section('Audits', 'enclave-sb-audit-section', this.auditList, this.auditCount, this.moreAudits, this.auditError),
      section('Release reports', 'enclave-sb-reports-section', this.reports.node)
    );
    this.formSection.append(this.form.node);
    this.audits.changed.connect(() => this.renderAudits());
  }

  showForm(open = true): void {
    this.formSection.hidden = !open;
    this.node.querySelector('.enclave-sb-new-request')?.setAttribute('aria-expanded', String(open));
    if (open) {
      this.form.focusFirst();
    }
  }

  async refresh(): Promise<void> {
    await Promise.all([
      this.loadWhoami(),
      this.loadSpecimens(false),
      this.audits.refresh(),
      this.form.loadPolicies(),
      this.reports.load(false)
    ]);
  }

  private async loadWhoami(): Promise<void> {
    try {
      const me = await call<WhoAmI>('GET', 'whoami');
      const item = (term: string, value: string, key: string): HTMLElement[] => [el('dt', {}, term), el('dd', { 'data-field': key }, value)];
      this.whoami.replaceChildren(
        ...item('Analyst', me.name, 'name'),
        ...item('Tenant', me.tenant, 'tenant'),
        ...item('Roles', me.roles.join(', ') || '—', 'roles'),
        // the service does not publish the remaining budget; its refusal (429) says when
        ...item('Disclosure budget', 'not published by the service; a request over it is refused with the wait', 'budget')
      );
    } catch (error) {
      this.whoami.replaceChildren(errorLine(error));
    }
  }

  private async loadSpecimens(more: boolean): Promise<void> {
    const query = {
      limit: this.pageSize,
      agent: this.agent.value.trim(),
      auditability: this.auditability.value,
      cursor: more ? this.cursor : null
    };
    const ask = ++this.specimenAsk;
    try {
      const page = await call<Page<SpecimenSummary>>('GET', 'specimens', { query });
      if (ask !== this.specimenAsk) {
        return;
      }
      if (!more) {
        this.specimenRows.replaceChildren();
        this.specimenIds = [];
      }
      for (const s of page.items) {
        this.specimenIds.push(s.specimen_id);
        this.specimenRows.append(
          el('tr', { 'data-specimen-id': s.specimen_id, 'data-agent': s.agent_name },
            el('td', { class: 'enclave-sb-id', title: s.specimen_id }, s.specimen_id),
            el('td', {}, `${s.agent_name} ${s.agent_version}`),
            el('td', { 'data-classification': s.highest_classification, title: `sealed ${s.sealed_at}` }, s.highest_classification))
        );
      }
      this.cursor = page.next;
      this.moreSpecimens.hidden = page.next === null;
      this.specimenCount.textContent = `${this.specimenIds.length} of ${page.total}`;
      this.specimenError.replaceChildren();
      this.form.setSpecimens(this.specimenIds);
    } catch (error) {
      if (ask === this.specimenAsk) {
        this.specimenError.replaceChildren(errorLine(error));
      }
    }
  }

  private renderAudits(): void {
    const items = this.audits.items;
    this.auditList.replaceChildren(...items.map(a => this.auditItem(a)));
    this.auditCount.textContent = `${items.length} of ${this.audits.total}; ${this.audits.running} running`;
    this.moreAudits.hidden = !this.audits.hasMore;
    this.auditError.replaceChildren(...(this.audits.error ? [errorLine(this.audits.error)] : []));
  }

  private auditItem(a: AuditStatus): HTMLElement {
    const done = a.progress_done;
    const total = Math.max(a.progress_total, 0);
    const progress = el('progress', { class: 'enclave-sb-progress', max: String(total || 1), value: String(done), 'aria-label': `${a.audit_id} progress` });
    const item = el('li', { class: 'enclave-sb-audit', 'data-audit-id': a.audit_id, 'data-status': a.status },
      el('div', { class: 'enclave-sb-audit-head' },
        el('span', { class: 'enclave-sb-id', title: a.audit_id }, a.audit_id),
        el('span', { class: 'enclave-sb-status', 'data-status': a.status }, a.status)),
      el('div', { class: 'enclave-sb-audit-progress' }, progress, el('span', { class: 'enclave-sb-progress-text' }, `${done}/${total}`)));
    if (a.classification) {
      item.append(el('span', { class: 'enclave-sb-classification', 'data-classification': a.classification }, a.classification));
    }
    if (a.failure_code) {
      item.append(el('span', { class: 'enclave-sb-failure', 'data-code': a.failure_code }, a.failure_code));
    }
    if (a.finding) {
      item.append(el('p', { class: 'enclave-sb-finding' }, a.finding));
    }
    const actions = el('div', { class: 'enclave-sb-audit-actions' });
    const reason = el('div', { class: 'enclave-sb-audit-reason', 'aria-live': 'polite' });
    if (a.has_certificate) {
      const open = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-open-certificate', type: 'button', 'aria-label': `Open the certificate of ${a.audit_id}` }, 'Open certificate');
      open.addEventListener('click', () => void this.openCertificate(a.audit_id).catch(e => reason.replaceChildren(errorLine(e))));
      actions.append(open);
    }
    if (!TERMINAL.has(a.status)) {
      // the service decides whether a cancel is allowed: its refusal is shown as given
      const cancel = el('button', { class: 'jp-Button jp-mod-styled jp-mod-warn enclave-sb-cancel', type: 'button', 'aria-label': `Cancel ${a.audit_id}` }, 'Cancel');
      cancel.addEventListener('click', () => {
        void call<AuditStatus>('POST', `audits/${encodeURIComponent(a.audit_id)}/cancel`, { body: { reason: 'withdrawn' } })
          .then(status => this.audits.update(status))
          .catch(e => reason.replaceChildren(errorLine(e)));
      });
      actions.append(cancel);
    }
    item.append(actions, reason);
    return item;
  }
}
