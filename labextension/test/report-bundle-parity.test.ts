/**
 * The browser's release report bundle verifier judges as
 * ``ledger.certificates.verify_report_bundle`` does: on every case of the committed
 * corpus (a release report's bundle, valid, tampered with and re-signed with lies;
 * written by ``tests/unit/release/report_bundle_corpus.py`` with the Python checks) and on
 * seeded one-character mutations of the report's proven entry and of a member's proofs
 * (judged by Python now), both give the same checks with the same sentences.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { TrustedKeySource } from '../src/trustedKey';
import { NO_WITNESSES } from '../src/verify/proven';
import { bothPass, verifyBoth } from '../src/verify/both';
import { loadTrustedKey } from '../src/verify/key';
import { isReportBundle, REPORT_BUNDLE_CHECKS, verifyReportBundle } from '../src/verify/reportBundle';
import * as server from '../src/verify/server';
import { loadLogKey } from '../src/verify/tlog';
import { VerifyReport } from '../src/verify/verifier';
import { renderEnvelope, VERIFY_LABEL } from '../src/viewer/dispatch';
import { fake, installFakeDom } from './fakeDom';
import { generator, REPO } from './fixtures';

type Checks = { ok: boolean; checks: Array<{ name: string; ok: boolean; detail: string }> };
interface Case {
  name: string;
  bundle: unknown;
  log_key: string;
  python: Checks;
}
interface Corpus {
  issuer_pem: string;
  log_key: string;
  shared: Record<string, unknown>;
  cases: Case[];
}

const corpus: Corpus = JSON.parse(readFileSync(resolve(__dirname, 'fixtures', 'report-bundle-corpus.json'), 'utf-8'));
const REF = '@shared:';

function expand(value: unknown): any {
  if (typeof value === 'string' && value.startsWith(REF)) {
    return structuredClone(corpus.shared[value.slice(REF.length)]);
  }
  if (Array.isArray(value)) {
    return value.map(expand);
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
  }
  return value;
}

const valid = (): any => expand(corpus.cases.find(c => c.name === 'valid')!.bundle);

function comparable(report: Checks | VerifyReport): unknown {
  return { ok: report.ok, checks: report.checks.map(c => [c.name, c.ok, c.detail]) };
}

function pythonReports(bundles: unknown[]): Checks[] {
  const script = [
    'import json, sys',
    'from ledger.certificates import load_public_key_pem',
    'from tests.unit.release.report_bundle_corpus import python_checks',
    'data = json.load(sys.stdin)',
    'issuer = load_public_key_pem(data["pem"].encode())',
    'json.dump([python_checks(b, issuer, data["log"]) for b in data["bundles"]], sys.stdout)'
  ].join('\n');
  const stdout = execFileSync(process.env.PYTHON ?? 'python', ['-c', script], {
    cwd: REPO,
    env: { ...process.env, PYTHONPATH: REPO },
    input: JSON.stringify({ pem: corpus.issuer_pem, log: corpus.log_key, bundles }),
    maxBuffer: 256 << 20
  });
  return JSON.parse(stdout.toString('utf-8'));
}

describe('report bundle parity with ledger.certificates.verify_report_bundle', () => {
  it('gives the committed Python checks on every corpus case', async () => {
    const issuer = await loadTrustedKey(corpus.issuer_pem);
    const first = new Set<string>();
    for (const c of corpus.cases) {
      const browser = await verifyReportBundle(expand(c.bundle), issuer, await loadLogKey(c.log_key));
      expect([c.name, comparable(browser)]).toEqual([c.name, comparable(c.python)]);
      const names = browser.checks.map(k => k.name);
      expect(names).toEqual(REPORT_BUNDLE_CHECKS.slice(0, names.length));
      first.add(browser.checks.find(k => !k.ok)?.name ?? 'none');
    }
    // the corpus passes once and fails at every check: the comparison is not vacuous
    expect([...first].sort()).toEqual(['none', ...REPORT_BUNDLE_CHECKS].sort());
  });

  it('gives the same checks as Python on 160 one-character mutations of proofs and entries', { timeout: 180000 }, async () => {
    const random = generator(20261207);
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n \u2014';
    const bundles: any[] = [];
    for (let i = 0; i < 160; i++) {
      const bundle = valid();
      const part = random() < 0.6 ? bundle.report_entry : bundle.certificates[Math.floor(random() * bundle.certificates.length)].certificate_entry;
      const field = random() < 0.35 ? 'entry' : 'proof';
      const text: string = part[field];
      const at = Math.floor(random() * text.length);
      part[field] = text.slice(0, at) + ALPHABET[Math.floor(random() * ALPHABET.length)] + text.slice(at + 1);
      bundles.push(bundle);
    }
    const python = pythonReports(bundles);
    const issuer = await loadTrustedKey(corpus.issuer_pem);
    const log = await loadLogKey(corpus.log_key);
    const failing = new Set<string>();
    for (const [i, bundle] of bundles.entries()) {
      const browser = await verifyReportBundle(bundle, issuer, log);
      expect([i, comparable(browser)]).toEqual([i, comparable(python[i])]);
      failing.add(browser.checks.find(k => !k.ok)?.name ?? 'none');
    }
    expect(failing.has('ledger entry') && failing.has('certificates')).toBe(true);
  });
});

describe('a report bundle in the viewer', () => {
  const keys = (log: string | null) =>
    ({
      load: () => loadTrustedKey(corpus.issuer_pem),
      loadLogKey: async () => (log === null ? null : loadLogKey(log)),
      loadWitnesses: async () => NO_WITNESSES
    }) as unknown as TrustedKeySource;

  it('is verified by the browser with both keys, and by the server when it has the log key', async () => {
    const text = JSON.stringify(valid());
    expect(isReportBundle(JSON.parse(text))).toBe(true);
    const python = corpus.cases.find(c => c.name === 'valid')!.python as unknown as VerifyReport;
    const asked = vi.spyOn(server, 'verifyOnServer').mockResolvedValue({ report: python });
    const outcomes = await verifyBoth(text, keys(corpus.log_key));
    expect(asked).toHaveBeenCalledWith(text);
    expect('report' in outcomes[0] && outcomes[0].report.checks.map(c => c.name)).toEqual([...REPORT_BUNDLE_CHECKS]);
    expect(bothPass(outcomes)).toBe(true);
    asked.mockResolvedValue({ report: { ...python, ok: false } });
    expect(bothPass(await verifyBoth(text, keys(corpus.log_key)))).toBe(false);
    asked.mockRestore();
  });

  it('fails without a log key, and a tampered report bundle fails in the browser', async () => {
    const skipped = { skipped: 'no trusted log key is configured on the Jupyter server' };
    const asked = vi.spyOn(server, 'verifyOnServer').mockResolvedValue(skipped);
    const [browser] = await verifyBoth(JSON.stringify(valid()), keys(null));
    expect(browser).toEqual({ error: 'no trusted log key is configured (Settings → Replay Enclave)' });
    const lie = expand(corpus.cases.find(c => c.name === 're-signed: a decision change called equivalent')!.bundle);
    const outcomes = await verifyBoth(JSON.stringify(lie), keys(corpus.log_key));
    expect('report' in outcomes[0] && outcomes[0].report.ok).toBe(false);
    expect(bothPass(outcomes)).toBe(false);
    asked.mockRestore();
  });

  it('shows the report bundle as its report', () => {
    installFakeDom();
    const bundle = valid();
    const shown = renderEnvelope(bundle);
    expect(shown.kind).toBe('report');
    expect(VERIFY_LABEL[shown.kind]).toBe('Verify report');
    expect(fake(shown.node).textContent).toBe(fake(renderEnvelope(bundle.envelope).node).textContent);
  });
});
