import { beforeAll, describe, expect, it } from 'vitest';

import { readCertificate } from '../src/certificate/model';
import { nextCursor } from '../src/enclave/api';
import { reportDate } from '../src/enclave/reports';
import { LABELS, REASONS, readReport, REPORT_TYPE, REPORT_TYPE_V1 } from '../src/report/model';
import { reportProblems, selectionDigest } from '../src/report/shape';
import { boundText, gateText, mustHoldMark, renderReport } from '../src/report/view';
import { renderEnvelope, VERIFY_LABEL } from '../src/viewer/dispatch';
import { decodeCanonicalBase64, encodeBase64 } from '../src/verify/base64';
import { loadTrustedKey } from '../src/verify/key';
import { verifyEnvelope, VerifyReport } from '../src/verify/verifier';
import { fake, installFakeDom } from './fakeDom';
import { Envelope, golden, goldenReport, newSigner, pythonReports, signed, statementOf } from './fixtures';

const firstFailure = (report: VerifyReport) => report.checks.find(c => !c.ok) ?? null;

function goldenModel(version: 'v1' | 'v2' = 'v2') {
  const view = readCertificate(goldenReport(version).envelope);
  return readReport(view.predicateType, view.subject, view.predicate);
}

beforeAll(() => installFakeDom());

describe('release report view model', () => {
  it('reads the golden report: rows, the failing must-hold specimen, totals, gate and digests', () => {
    const statement = statementOf(goldenReport().envelope);
    const p = statement.predicate;
    const model = goldenModel();
    expect(model.subject).toBe('release-selection');
    expect(model.gatePassed).toBe(false);
    expect(model.failing).toEqual(p.gate.failing);
    expect(model.rows.map(r => r.specimen)).toEqual(p.specimens.map((r: { specimen: string }) => r.specimen));
    const failing = model.rows.filter(r => r.failing);
    expect(failing).toHaveLength(1);
    expect(failing[0]).toMatchObject({ mustHold: true, label: 'decision-changed', reason: null });
    expect(model.rows.filter(r => r.mustHold)).toEqual(failing);
    const notAuditable = model.rows.filter(r => r.label === 'not-auditable');
    expect(notAuditable.length).toBeGreaterThan(0);
    expect(notAuditable.every(r => (REASONS as readonly (string | null)[]).includes(r.reason) && r.certificate === null)).toBe(true);
    expect(model.rows.map(r => r.sealed)).toContain('not-auditable-beyond before-drop');
    expect(model.version).toBe(2);
    expect(model.bound).toEqual({ bits: 3 * model.rows.length, perSpecimen: 3 });
    expect(model.totals.map(([name]) => name)).toEqual([...LABELS, 'erased', 'specimens']);
    expect(Object.fromEntries(model.totals)).toEqual(p.totals);
    expect(model.selectionDigest).toBe(p.selection_digest);
    expect(model.baselineCode).toEqual(p.baseline_code);
    expect(model.intervention).toContainEqual(['candidate code digest', p.intervention.digest]);
    expect(model.samples).toBe(p.samples);
  });

  it('states the gate and marks must-hold rows', () => {
    const model = goldenModel();
    expect(gateText(model)).toBe(`Gate FAILED: 1 must-hold specimen did not hold (${model.failing[0]})`);
    expect(gateText({ ...model, gatePassed: true, failing: [] })).toMatch(/^Gate PASSED/);
    expect(gateText({ ...model, gatePassed: null })).toBe('Gate: not stated');
    const held = model.rows.find(r => r.mustHold)!;
    expect(mustHoldMark(held)).toBe('✗ must hold: fails the gate');
    expect(mustHoldMark({ ...held, failing: false })).toBe('✓ must hold: holds');
    expect(mustHoldMark(model.rows.find(r => !r.mustHold)!)).toBe('—');
  });

  it('describes a revision swap without a candidate digest', () => {
    const model = readReport(REPORT_TYPE, 'release-selection', { intervention: { strategy: 'REVISION', revision: 'model=r2' } });
    expect(model.intervention).toEqual([['strategy', 'REVISION'], ['revision', 'model=r2']]);
    expect(model.gatePassed).toBeNull();
    expect(model.rows).toEqual([]);
  });
});

describe('release report rendering', () => {
  it('renders the gate verdict, one row per specimen with label, reason and must-hold mark, totals and digests', () => {
    const model = goldenModel();
    const node = fake(renderReport(model));
    const gate = node.querySelector('.enclave-gate')!;
    expect(gate.getAttribute('data-passed')).toBe('false');
    expect(gate.textContent).toContain(model.failing[0]);
    const rows = node.querySelectorAll('tr.enclave-report-row');
    expect(rows.map(r => r.getAttribute('data-specimen'))).toEqual(model.rows.map(r => r.specimen));
    const failing = node.querySelectorAll("tr[data-failing='true']");
    expect(failing).toHaveLength(1);
    expect(failing[0].getAttribute('data-specimen')).toBe(model.failing[0]);
    expect(failing[0].querySelector('.enclave-report-must-hold')!.textContent).toBe('✗ must hold: fails the gate');
    expect(failing[0].querySelector('.enclave-report-label')!.textContent).toBe('decision-changed');
    for (const row of model.rows.filter(r => r.label === 'not-auditable')) {
      const tr = node.querySelector(`tr[data-specimen='${row.specimen}']`)!;
      expect(tr.querySelector('.enclave-report-reason')!.textContent).toBe(row.reason);
    }
    const text = node.textContent;
    expect(text).toContain(model.selectionDigest);
    for (const digest of model.baselineCode) {
      expect(text).toContain(digest);
    }
    const candidate = model.intervention.find(([k]) => k === 'candidate code digest')![1];
    expect(node.querySelector("dd[data-field='candidate code digest']")!.textContent).toBe(candidate);
    const totals = node.querySelectorAll('.enclave-report-totals tbody tr').map(tr => tr.textContent);
    expect(totals).toContain('decision-changed2');
    expect(totals).toContain('specimens4');
    expect(node.querySelector('.enclave-report-bound')!.textContent).toBe(
      'The code under audit chose at most 12 bits of this report (3 per specimen); each certificate states its own'
    );
    const sealed = node.querySelectorAll('.enclave-report-sealed').map(td => td.textContent);
    expect(sealed).toContain('not-auditable-beyond before-drop');
    expect(node.querySelectorAll('.enclave-report-layers')).toHaveLength(0);
  });

  it('renders a v1 report with its layers changed and no bound', () => {
    const model = goldenModel('v1');
    expect(model.version).toBe(1);
    expect(boundText(model)).toBe('A v1 report states no bound: it lists layers by name');
    const node = fake(renderReport(model));
    const layers = node.querySelectorAll('.enclave-report-layers').map(td => td.textContent);
    expect(layers).toHaveLength(model.rows.length);
    expect(layers.some(t => t !== '—')).toBe(true);
    expect(node.querySelectorAll('.enclave-report-sealed')).toHaveLength(0);
  });
});

describe('the viewer dispatches on the predicate type', () => {
  it('renders a report as a report', () => {
    const rendered = renderEnvelope(goldenReport().envelope);
    expect(rendered.kind).toBe('report');
    expect(fake(rendered.node).getAttribute('class')).toBe('enclave-report');
    expect(VERIFY_LABEL[rendered.kind]).toBe('Verify report');
  });

  it('still renders a certificate as a certificate', () => {
    for (const version of ['v1', 'v2'] as const) {
      const rendered = renderEnvelope(golden(version).envelope);
      expect(rendered.kind).toBe('certificate');
      const node = fake(rendered.node);
      expect(node.getAttribute('class')).toBe('enclave-certificate');
      expect(node.getAttribute('data-version')).toBe(version);
      expect(node.querySelector('.enclave-gate')).toBeNull();
      expect(node.querySelector('.enclave-classification')).not.toBeNull();
      expect(VERIFY_LABEL[rendered.kind]).toBe('Verify certificate');
    }
  });

  it('renders a statement of another type as a certificate (the verifier refuses its type)', () => {
    const statement = statementOf(golden('v2').envelope);
    statement.predicateType = REPORT_TYPE.replace('/v2', '/v9');
    const envelope = { ...golden('v2').envelope, payload: encodeBase64(new TextEncoder().encode(JSON.stringify(statement))) };
    expect(renderEnvelope(envelope).kind).toBe('certificate');
  });
});

describe('the sidebar list', () => {
  it('shows the issue date to the minute, and an unparseable one as given', () => {
    expect(reportDate('2026-12-01T02:14:35.155167+00:00')).toBe('2026-12-01 02:14 UTC');
    expect(reportDate('not a date')).toBe('not a date');
  });
});

type Case = { name: string; envelope: unknown; pem: string; fails: string | null };

async function reportCases(): Promise<Case[]> {
  const { envelope, pem } = goldenReport();
  const out: Case[] = [{ name: 'golden report', envelope, pem, fails: null }];
  const flipped: Envelope = JSON.parse(JSON.stringify(envelope));
  const bytes = decodeCanonicalBase64(flipped.payload)!;
  bytes[300] ^= 0x01;
  flipped.payload = encodeBase64(bytes);
  out.push({ name: 'payload byte flipped', envelope: flipped, pem, fails: 'signature' });
  const stranger = await newSigner();
  out.push({ name: 'another key', envelope, pem: stranger.pem, fails: 'signature' });

  const issuer = await newSigner();
  const base = statementOf(envelope);
  base.predicate.issuer = issuer.keyid;
  const lie = async (name: string, fails: string | null, edit: (s: Record<string, any>) => void) => {
    const statement = structuredClone(base);
    edit(statement);
    out.push({ name, envelope: await signed(issuer, statement), pem: issuer.pem, fails });
  };
  await lie('re-signed, shape holds', null, () => undefined);
  await lie('a changed label (totals no longer follow)', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'decision-changed').label = 'equivalent';
  });
  await lie('the gate claims a pass', 'predicate', s => {
    s.predicate.gate = { passed: true, failing: [] };
  });
  await lie('a member dropped, totals fixed up', 'predicate', s => {
    const p = s.predicate;
    const dropped = p.specimens.find((r: any) => !r.must_hold);
    p.specimens = p.specimens.filter((r: any) => r !== dropped);
    p.totals[dropped.label] -= 1;
    p.totals.specimens -= 1;
  });
  await lie('an unknown label', 'predicate', s => {
    s.predicate.specimens[0].label = 'fine';
  });
  await lie('a not-auditable row without its reason', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'not-auditable').reason = null;
  });
  await lie('a reason on an audited row', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'decision-changed').reason = 'x';
  });
  await lie('rows out of order', 'predicate', s => {
    s.predicate.specimens.reverse();
  });
  await lie('an extra predicate key', 'predicate', s => {
    s.predicate.verdict = 'ship it';
  });
  await lie('a row key missing', 'predicate', s => {
    delete s.predicate.specimens[1].sealed;
  });
  await lie('a free-text reason', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'not-auditable').reason = 'ship it';
  });
  await lie('layers listed in a v2 row', 'predicate', s => {
    s.predicate.specimens[0].layers_changed = ['decision'];
  });
  await lie('a smaller bound', 'predicate', s => {
    s.predicate.disclosure.bits -= 1;
  });
  await lie('a bound as a string', 'predicate', s => {
    s.predicate.disclosure.bits_per_specimen = '3';
  });
  await lie('a decision change with no certificate', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'decision-changed').certificate = null;
  });
  await lie('a refused member that names an audit', 'predicate', s => {
    s.predicate.specimens.find((r: any) => r.label === 'not-auditable').reason = 'refused';
  });
  await lie('a sealed field that is not a cut', 'predicate', s => {
    s.predicate.specimens[0].sealed = 'ship it';
  });
  await lie('v1 rows under the v2 type', 'predicate', s => {
    const v1 = statementOf(goldenReport('v1').envelope).predicate;
    s.predicate.specimens = v1.specimens;
  });
  const v1 = goldenReport('v1');
  out.push({ name: 'golden v1 report', envelope: v1.envelope, pem: v1.pem, fails: null });
  const v1Base = statementOf(v1.envelope);
  v1Base.predicate.issuer = issuer.keyid;
  const v1Gate = structuredClone(v1Base);
  v1Gate.predicate.gate = { passed: true, failing: [] };
  out.push({ name: 'v1: the gate claims a pass', envelope: await signed(issuer, v1Gate), pem: issuer.pem, fails: 'predicate' });
  const v1Bound = structuredClone(v1Base);
  v1Bound.predicate.disclosure = { bits: 0, bits_per_specimen: 3 };
  out.push({ name: 'v1: a bound it never had', envelope: await signed(issuer, v1Bound), pem: issuer.pem, fails: 'predicate' });
  const v1Typed = structuredClone(v1Base);
  v1Typed.predicateType = REPORT_TYPE_V1;
  out.push({ name: 'v1: re-signed', envelope: await signed(issuer, v1Typed), pem: issuer.pem, fails: null });
  await lie('totals as strings', 'predicate', s => {
    s.predicate.totals.specimens = String(s.predicate.totals.specimens);
  });
  await lie('the gate as a string', 'predicate', s => {
    s.predicate.gate.passed = 'false';
  });
  await lie('samples zero', 'predicate', s => {
    s.predicate.samples = 0;
  });
  await lie('baseline code unsorted', 'predicate', s => {
    s.predicate.baseline_code.reverse();
  });
  await lie('a specimen subject', 'statement', s => {
    s.subject[0].name = 'specimen:sp-1';
  });
  await lie('two subjects', 'statement', s => {
    s.subject.push(s.subject[0]);
  });
  await lie('another subject digest', 'predicate', s => {
    s.subject[0].digest.sha256 = '0'.repeat(64);
  });
  await lie('issuer is not the signer', 'statement', s => {
    s.predicate.issuer = stranger.keyid;
  });
  return out;
}

describe('verifying a release report', () => {
  it('passes the golden report with every named check, as a release report', async () => {
    const { envelope, pem } = goldenReport();
    const report = await verifyEnvelope(envelope, await loadTrustedKey(pem));
    expect(report.ok).toBe(true);
    expect(report.checks.map(c => c.name)).toEqual(['envelope', 'signature', 'statement', 'predicate']);
    expect(report.checks[2].detail).toContain('(release report v2) about release-selection');
    expect(report.checks[3].detail).toContain('totals, gate and bound recomputed');
    const v1 = goldenReport('v1');
    const older = await verifyEnvelope(v1.envelope, await loadTrustedKey(v1.pem));
    expect(older.ok).toBe(true);
    expect(older.checks[2].detail).toContain('(release report v1) about release-selection');
  });

  it('fails each lie at the expected check, and agrees with the Python verifier check by check', async () => {
    const all = await reportCases();
    const browser: VerifyReport[] = [];
    for (const c of all) {
      const report = await verifyEnvelope(c.envelope, await loadTrustedKey(c.pem));
      browser.push(report);
      expect([c.name, firstFailure(report)?.name ?? null]).toEqual([c.name, c.fails]);
      expect(firstFailure(report)?.detail ?? '').not.toMatch(/ship it|fine|sp-/);
    }
    const python = pythonReports(all.map(c => ({ envelope: c.envelope, pem: c.pem })));
    all.forEach((c, i) => expect([c.name, browser[i]]).toEqual([c.name, python[i]]));
  });

  it('recomputes the selection digest as the enclave does', async () => {
    const p = statementOf(goldenReport().envelope).predicate;
    const ids = p.specimens.map((r: { specimen: string }) => r.specimen);
    expect(await selectionDigest([...ids].reverse(), p.erased)).toBe(p.selection_digest);
    expect(await reportProblems(p, p.selection_digest.slice(7))).toEqual([]);
  });
});

describe('report pages', () => {
  it('take the next cursor under either name', () => {
    expect(nextCursor({ items: [], next: 'c1', total: 3 })).toBe('c1');
    expect(nextCursor({ items: [], next_cursor: 'c2' })).toBe('c2');
    expect(nextCursor({ items: [], next: null })).toBeNull();
    expect(nextCursor({ items: [] })).toBeNull();
  });
});
