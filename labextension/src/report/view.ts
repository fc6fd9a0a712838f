/**
 * The release report rendered as DOM: the gate verdict, one row per specimen (label and
 * reason, must-hold mark, the sealed cut — or a v1 row's layers changed), the totals,
 * the disclosure bound, the intervention with the candidate's code digest, the baseline
 * code digests and the selection digest. Text only (``el``), so the report's strings
 * stay inert.
 */

import { el, table } from '../certificate/dom';
import { ReportModel, ReportRow } from './model';

function section(title: string, className: string, ...children: Array<Node | null>): HTMLElement {
  const id = `enclave-h-${Math.random().toString(36).slice(2, 10)}`;
  return el('section', { class: `enclave-section ${className}`, 'aria-labelledby': id }, el('h3', { id }, title), ...children);
}

export function gateText(model: ReportModel): string {
  if (model.gatePassed === null) {
    return 'Gate: not stated';
  }
  if (model.gatePassed) {
    return 'Gate PASSED: every must-hold specimen holds';
  }
  const n = model.failing.length;
  return `Gate FAILED: ${n} must-hold specimen${n === 1 ? '' : 's'} did not hold (${model.failing.join(', ')})`;
}

export function mustHoldMark(row: ReportRow): string {
  if (!row.mustHold) {
    return '—';
  }
  return row.failing ? '✗ must hold: fails the gate' : '✓ must hold: holds';
}

function gate(model: ReportModel): HTMLElement {
  const state = model.gatePassed === null ? 'none' : String(model.gatePassed);
  return el('p', { class: 'enclave-gate', 'data-passed': state, role: 'status', 'aria-label': gateText(model) }, gateText(model));
}

function specimenRow(version: 1 | 2, row: ReportRow): HTMLElement {
  const last =
    version === 2
      ? el('td', { class: 'enclave-report-sealed' }, row.sealed ?? '—')
      : el('td', { class: 'enclave-report-layers' }, row.layersChanged.join(', ') || '—');
  return el(
    'tr',
    {
      class: 'enclave-report-row',
      'data-specimen': row.specimen,
      'data-label': row.label,
      'data-must-hold': String(row.mustHold),
      'data-failing': String(row.failing)
    },
    el('th', { scope: 'row', class: 'enclave-report-specimen' }, row.specimen),
    el('td', {}, el('span', { class: 'enclave-report-label', 'data-label': row.label }, row.label)),
    el('td', { class: 'enclave-report-reason' }, row.reason ?? '—'),
    el('td', { class: 'enclave-report-must-hold', 'data-failing': String(row.failing) }, mustHoldMark(row)),
    last,
    el('td', { class: 'enclave-report-certificate', title: row.certificate ?? '' }, row.certificate === null ? 'none' : `${row.audit ?? ''}`)
  );
}

function specimens(model: ReportModel): HTMLElement {
  const header = ['specimen', 'label', 'reason', 'must hold', model.version === 2 ? 'sealed cut' : 'layers changed', 'certificate of audit'];
  return section(
    `Specimens (${model.rows.length})`,
    'enclave-report-specimens-section',
    el(
      'table',
      { class: 'enclave-table enclave-report-specimens' },
      el('caption', {}, 'One audit per specimen: its label, and for a must-hold specimen whether it holds'),
      el('thead', {}, el('tr', {}, ...header.map(h => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...model.rows.map(row => specimenRow(model.version, row)))
    )
  );
}

function totals(model: ReportModel): HTMLElement {
  const rows = model.totals.map(([name, n]) => [name, n === null ? '—' : String(n)]);
  return section('Totals', 'enclave-report-totals-section', table('enclave-report-totals', 'Specimens per label', ['label', 'specimens'], rows));
}

export function boundText(model: ReportModel): string {
  if (model.bound === null) {
    return 'A v1 report states no bound: it lists layers by name';
  }
  const { bits, perSpecimen } = model.bound;
  return `The code under audit chose at most ${bits ?? '—'} bits of this report (${perSpecimen ?? '—'} per specimen); each certificate states its own`;
}

function digests(model: ReportModel): HTMLElement {
  const list = el('dl', { class: 'enclave-report-facts' });
  const add = (name: string, value: Node | string): void => {
    list.append(el('dt', {}, name), el('dd', { 'data-field': name }, value));
  };
  for (const [name, value] of model.intervention) {
    add(name, value);
  }
  add('selection digest', model.selectionDigest);
  add('baseline code digests', el('ul', { class: 'enclave-report-baseline' }, ...model.baselineCode.map(d => el('li', {}, d))));
  add('must-hold tags', model.mustHoldTags.join(', ') || '—');
  add('samples', model.samples === null ? '—' : `${model.samples} paired per specimen`);
  add('erased members', model.erased.join(', ') || 'none');
  return section('Intervention and digests', 'enclave-report-facts-section', list);
}

export function renderReport(model: ReportModel): HTMLElement {
  return el(
    'article',
    { class: 'enclave-report', 'aria-label': `Replay Enclave release report over ${model.subject}` },
    el('h2', {}, 'Release report'),
    gate(model),
    specimens(model),
    totals(model),
    el('p', { class: 'enclave-report-bound' }, boundText(model)),
    digests(model),
    el('p', { class: 'enclave-issued' }, `issued ${model.issuedAt} by ${model.issuer}`)
  );
}
