/**
 * The two verifications side by side: one row per named check, the browser's verdict
 * and the server's, the first failing check highlighted.
 */

import { el } from '../certificate/dom';
import { VerifyReport } from './verifier';

/** A side's verdict; ``skipped``: the side does not verify this kind of file (the
 * server, for a bundle), which the overall verdict does not count against. */
export type Outcome = { report: VerifyReport } | { error: string } | { skipped: string };

/** Every side that verified passed, and at least one did. */
export function allPass([browser, server]: [Outcome, Outcome]): boolean {
  const sides = [browser, server].filter(o => !('skipped' in o));
  return sides.length > 0 && sides.every(o => 'report' in o && o.report.ok);
}

function cell(side: string, outcome: Outcome, name: string): HTMLElement {
  if ('skipped' in outcome) {
    return el('td', { class: 'enclave-verify-cell', 'data-side': side, 'data-ok': 'absent' }, 'not checked');
  }
  if ('error' in outcome) {
    return el('td', { class: 'enclave-verify-cell', 'data-side': side, 'data-ok': 'error' }, '—');
  }
  const check = outcome.report.checks.find(c => c.name === name);
  if (check === undefined) {
    return el('td', { class: 'enclave-verify-cell', 'data-side': side, 'data-ok': 'absent' }, 'not checked');
  }
  const verdict = check.ok ? '✓ pass' : check.detail === 'not run' ? '· not run' : '✗ FAIL';
  return el(
    'td',
    {
      class: 'enclave-verify-cell',
      'data-side': side,
      'data-name': name,
      'data-ok': String(check.ok),
      'aria-label': `${side}: ${name} ${check.ok ? 'passes' : 'fails'}`
    },
    el('span', { class: 'enclave-verdict' }, verdict),
    check.detail === 'not run' ? null : el('span', { class: 'enclave-verify-detail' }, check.detail)
  );
}

function firstFailure(outcome: Outcome): string | null {
  return 'report' in outcome ? (outcome.report.checks.find(c => !c.ok)?.name ?? null) : null;
}

function summary(side: string, outcome: Outcome): HTMLElement {
  if ('skipped' in outcome) {
    return el('li', { class: 'enclave-verify-summary', 'data-side': side, 'data-ok': 'skipped' }, `${side}: ${outcome.skipped}`);
  }
  const state = 'error' in outcome ? 'error' : String(outcome.report.ok);
  const text =
    'error' in outcome
      ? `${side}: could not verify — ${outcome.error}`
      : `${side}: ${outcome.report.ok ? 'all checks pass' : `fails at ${firstFailure(outcome)}`}`;
  return el('li', { class: 'enclave-verify-summary', 'data-side': side, 'data-ok': state }, text);
}

/** The finding the browser re-derived from the figures it verified; the server's, when
 * it states one, must be the same sentence. */
function findingLine(browser: Outcome, server: Outcome): HTMLElement | null {
  const mine = 'report' in browser && browser.report.ok ? browser.report.finding : null;
  if (!mine) {
    return null;
  }
  const theirs = 'report' in server && server.report.ok ? server.report.finding : null;
  const agree = theirs === null || theirs === undefined || theirs === mine;
  return el(
    'p',
    { class: 'enclave-verified-finding', 'data-agree': String(agree) },
    agree ? `Verified finding: ${mine}` : `The verifiers state different findings. Browser: ${mine} Server: ${theirs}`
  );
}

export function renderResults(browser: Outcome, server: Outcome): HTMLElement {
  const names: string[] = [];
  for (const outcome of [browser, server]) {
    if ('report' in outcome) {
      for (const check of outcome.report.checks) {
        if (!names.includes(check.name)) {
          names.push(check.name);
        }
      }
    }
  }
  const failing = firstFailure(browser) ?? firstFailure(server);
  const ok = allPass([browser, server]);
  const skipped = 'skipped' in browser || 'skipped' in server;
  const rows = names.map(name =>
    el(
      'tr',
      {
        class: `enclave-verify-check${name === failing ? ' enclave-first-failure' : ''}`,
        'data-name': name
      },
      el('th', { scope: 'row' }, name),
      cell('browser', browser, name),
      cell('server', server, name)
    )
  );
  return el(
    'div',
    {
      class: 'enclave-verification',
      'data-ok': String(ok),
      'data-first-failure': failing ?? '',
      role: 'region',
      'aria-label': 'Verification results',
      'aria-live': 'polite'
    },
    el('h3', {}, ok ? (skipped ? 'Verified in the browser' : 'Verified in the browser and on the server') : 'Verification FAILED'),
    findingLine(browser, server),
    el('ul', { class: 'enclave-verify-summaries' }, summary('browser', browser), summary('server', server)),
    el(
      'table',
      { class: 'enclave-table enclave-verify-table' },
      el('caption', {}, 'Named checks: the browser (WebCrypto) and the server extension (Python)'),
      el(
        'thead',
        {},
        el('tr', {}, el('th', { scope: 'col' }, 'check'), el('th', { scope: 'col' }, 'browser'), el('th', { scope: 'col' }, 'server'))
      ),
      el('tbody', {}, ...rows)
    )
  );
}
