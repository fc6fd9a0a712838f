/**
 * The sidebar's release reports: the tenant's signed reports, newest first, one page at
 * a time (the service's cursor), each with its gate badge, date and specimen count and
 * an Open button that opens the report in the certificate viewer. The list holds no
 * more than those fields; the report itself is fetched only when opened.
 */

import { el } from '../certificate/dom';
import { call, nextCursor, ReportPage, ReportSummary } from './api';
import { errorLine } from './parts';

/** ``2026-12-01T02:14:35.155167+00:00`` as ``2026-12-01 02:14 UTC`` (else as given). */
export function reportDate(issuedAt: string): string {
  const at = new Date(issuedAt);
  if (Number.isNaN(at.getTime())) {
    return issuedAt;
  }
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function gateBadge(passed: boolean): HTMLElement {
  return el('span', { class: 'enclave-sb-gate', 'data-passed': String(passed) }, passed ? 'gate passed' : 'gate FAILED');
}

export class ReportList {
  readonly node: HTMLElement;
  private readonly list = el('ul', { class: 'enclave-sb-reports', 'aria-label': 'Release reports' });
  private readonly count = el('p', { class: 'enclave-sb-count' });
  private readonly more = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-more-reports', type: 'button' }, 'More reports');
  private readonly error = el('div', { class: 'enclave-sb-report-error', 'aria-live': 'polite' });
  private cursor: string | null = null;
  private shown = 0;
  /** Reports per page. */
  pageSize = 10;

  constructor(private readonly open: (reportId: string) => Promise<void>) {
    this.more.hidden = true;
    this.more.addEventListener('click', () => void this.load(true));
    this.node = el('div', { class: 'enclave-sb-report-list' }, this.list, this.count, this.more, this.error);
  }

  async load(more: boolean): Promise<void> {
    try {
      const page = await call<ReportPage>('GET', 'reports', { query: { limit: this.pageSize, cursor: more ? this.cursor : null } });
      if (!more) {
        this.list.replaceChildren();
        this.shown = 0;
      }
      this.list.append(...page.items.map(r => this.item(r)));
      this.shown += page.items.length;
      this.cursor = nextCursor(page);
      this.more.hidden = this.cursor === null;
      const total = typeof page.total === 'number' ? ` of ${page.total}` : '';
      this.count.textContent = this.shown === 0 ? 'No release reports yet.' : `${this.shown}${total}`;
      this.error.replaceChildren();
    } catch (error) {
      this.error.replaceChildren(errorLine(error));
    }
  }

  private item(r: ReportSummary): HTMLElement {
    const reason = el('div', { class: 'enclave-sb-report-reason', 'aria-live': 'polite' });
    const open = el('button', { class: 'jp-Button jp-mod-styled enclave-sb-open-report', type: 'button', 'aria-label': `Open the release report ${r.report_id}` }, 'Open report');
    open.addEventListener('click', () => void this.open(r.report_id).catch(e => reason.replaceChildren(errorLine(e))));
    return el(
      'li',
      { class: 'enclave-sb-report', 'data-report-id': r.report_id, 'data-gate-passed': String(r.gate_passed) },
      el('div', { class: 'enclave-sb-report-head' }, el('span', { class: 'enclave-sb-id', title: r.report_id }, r.report_id), gateBadge(r.gate_passed)),
      el(
        'div',
        { class: 'enclave-sb-report-facts' },
        el('span', { class: 'enclave-sb-report-date', title: r.issued_at }, reportDate(r.issued_at)),
        ' · ',
        el('span', { class: 'enclave-sb-report-specimens' }, `${r.specimens} specimen${r.specimens === 1 ? '' : 's'}`)
      ),
      el('div', { class: 'enclave-sb-audit-actions' }, open),
      reason
    );
  }
}
