/**
 * The browser's bundle verifier judges as ``ledger.certificates.verify_bundle`` does: on
 * every case of the committed corpus (a demo's bundles, valid and tampered with; written
 * by ``tests/unit/certificates/bundle_corpus.py`` with the Python reports) and on seeded
 * one-character mutations of a bundle's entries and proofs (judged by Python now), both
 * reach the same first failing check, with the same sentence from ``checkpoint`` on.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { TrustedKeySource } from '../src/trustedKey';
import { NO_WITNESSES } from '../src/verify/proven';
import { BUNDLE_STEPS, envelopeDigest, isBundle, verifyBundle } from '../src/verify/bundle';
import { verifyBoth, bothPass } from '../src/verify/both';
import * as server from '../src/verify/server';
import { KeyError, loadTrustedKey } from '../src/verify/key';
import {
  decodeBase64,
  hashChildren,
  hashLeaf,
  loadLogKey,
  parseProof,
  TlogInvalid,
  verifyInclusion
} from '../src/verify/tlog';
import { VerifyReport } from '../src/verify/verifier';
import { renderEnvelope } from '../src/viewer/dispatch';
import { fake, installFakeDom } from './fakeDom';
import { generator, REPO } from './fixtures';

type Report = { ok: boolean; checks: Array<{ name: string; ok: boolean; detail: string }> };
interface Case {
  name: string;
  bundle: unknown;
  log_key: string;
  python: Report;
}
interface Corpus {
  issuer_pem: string;
  log_key: string;
  envelopes: Record<string, unknown>;
  cases: Case[];
}

const corpus: Corpus = JSON.parse(readFileSync(resolve(__dirname, 'fixtures', 'bundle-corpus.json'), 'utf-8'));

function expand(value: unknown): any {
  const out = structuredClone(value) as any;
  if (out && typeof out === 'object' && typeof out.envelope === 'string' && out.envelope.startsWith('@')) {
    out.envelope = structuredClone(corpus.envelopes[out.envelope.slice(1)]);
  }
  return out;
}

const BUNDLE_ONLY = new Set(['checkpoint', 'subject', 'ledger_entry']);

/** What must agree: each check's name and verdict, and the failing sentence where the
 * two verifiers share it (the bundle's own checks and its shape). Steps 1–4's other
 * sentences are ``_verify.py``'s on one side and ``_offline.py``'s port on the other. */
function comparable(report: Report | VerifyReport): unknown {
  const failing = report.checks.find(c => !c.ok);
  const shared =
    failing !== undefined &&
    (BUNDLE_ONLY.has(failing.name) || failing.detail === 'not a certificate bundle (keys or media type)');
  return {
    ok: report.ok,
    checks: report.checks.map(c => [c.name, c.ok]),
    failing: failing?.name ?? null,
    detail: shared ? failing.detail : null
  };
}

function pythonBundleReports(cases: Array<{ bundle: unknown; log_key: string }>): Report[] {
  const script = [
    'import json, sys',
    'from ledger.certificates import load_public_key_pem, verify_bundle',
    'from ledger.certificates.tlog import NoteVerifier',
    'data = json.load(sys.stdin)',
    'issuer = load_public_key_pem(data["pem"].encode())',
    'out = []',
    'for case in data["cases"]:',
    '    report = verify_bundle(case["bundle"], public_key=issuer, log_key=NoteVerifier.parse(case["log_key"]))',
    '    out.append(report.to_dict())',
    'json.dump(out, sys.stdout)'
  ].join('\n');
  const stdout = execFileSync(process.env.PYTHON ?? 'python', ['-c', script], {
    cwd: REPO,
    env: { ...process.env, PYTHONPATH: REPO },
    input: JSON.stringify({ pem: corpus.issuer_pem, cases }),
    maxBuffer: 64 << 20
  });
  return JSON.parse(stdout.toString('utf-8'));
}


const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n \u2014';

describe('bundle parity with ledger.certificates.verify_bundle', () => {
  it('reaches the same checks as the committed Python reports on every corpus case', async () => {
    const issuer = await loadTrustedKey(corpus.issuer_pem);
    const failures = new Set<string>();
    for (const c of corpus.cases) {
      const log = await loadLogKey(c.log_key);
      const browser = await verifyBundle(expand(c.bundle), issuer, log);
      expect([c.name, comparable(browser)]).toEqual([c.name, comparable(c.python)]);
      expect(browser.checks.map(k => k.name)).toEqual([...BUNDLE_STEPS]);
      failures.add(browser.checks.find(k => !k.ok)?.name ?? 'none');
    }
    // the corpus reaches every check, and passes too: the comparison is not vacuous
    for (const name of ['none', 'envelope', 'signature', 'checkpoint', 'subject', 'ledger_entry']) {
      expect([name, failures.has(name)]).toEqual([name, true]);
    }
  });

  it('the committed reports are what verify_bundle says today', () => {
    const python = pythonBundleReports(corpus.cases.map(c => ({ bundle: expand(c.bundle), log_key: c.log_key })));
    expect(python).toEqual(corpus.cases.map(c => c.python));
  });

  it('reaches the same checks on 240 one-character mutations of entries and proofs', { timeout: 120000 }, async () => {
    const valid = expand(corpus.cases.find(c => c.name === 'valid')!.bundle);
    const random = generator(20261206);
    const cases: Array<{ bundle: unknown; log_key: string }> = [];
    for (let i = 0; i < 240; i++) {
      const part = random() < 0.5 ? 'specimen_entry' : 'certificate_entry';
      const field = random() < 0.35 ? 'entry' : 'proof';
      const bundle = structuredClone(valid);
      const text: string = bundle[part][field];
      const at = Math.floor(random() * text.length);
      const ch = ALPHABET[Math.floor(random() * ALPHABET.length)];
      bundle[part][field] = text.slice(0, at) + ch + text.slice(at + 1);
      cases.push({ bundle, log_key: corpus.log_key });
    }
    const python = pythonBundleReports(cases);
    const issuer = await loadTrustedKey(corpus.issuer_pem);
    const log = await loadLogKey(corpus.log_key);
    const failures = new Set<string>();
    for (const [i, c] of cases.entries()) {
      const browser = await verifyBundle(c.bundle, issuer, log);
      expect([i, comparable(browser)]).toEqual([i, comparable(python[i])]);
      failures.add(browser.checks.find(k => !k.ok)?.name ?? 'none');
    }
    expect(failures.has('checkpoint') && failures.has('subject') && failures.has('ledger_entry')).toBe(true);
  });
});

describe('the transparency-log math', () => {
  it('proves every leaf of small trees and rejects a wrong index or path', async () => {
    const leaves = await Promise.all(Array.from({ length: 7 }, (_, i) => hashLeaf(Uint8Array.of(i))));
    // RFC 9162 MTH: split at the largest power of two below n
    const mth = async (hs: Uint8Array[]): Promise<Uint8Array> => {
      if (hs.length === 1) {
        return hs[0];
      }
      let k = 1;
      while (k * 2 < hs.length) {
        k *= 2;
      }
      return hashChildren(await mth(hs.slice(0, k)), await mth(hs.slice(k)));
    };
    const path = async (m: number, hs: Uint8Array[]): Promise<Uint8Array[]> => {
      if (hs.length === 1) {
        return [];
      }
      let k = 1;
      while (k * 2 < hs.length) {
        k *= 2;
      }
      return m < k
        ? [...(await path(m, hs.slice(0, k))), await mth(hs.slice(k))]
        : [...(await path(m - k, hs.slice(k))), await mth(hs.slice(0, k))];
    };
    for (let n = 1; n <= 7; n++) {
      const tree = leaves.slice(0, n);
      const root = await mth(tree);
      for (let m = 0; m < n; m++) {
        const proof = await path(m, tree);
        await verifyInclusion(tree[m], BigInt(m), BigInt(n), proof, root);
        if (n > 1) {
          await expect(verifyInclusion(tree[m], BigInt((m + 1) % n), BigInt(n), proof, root)).rejects.toThrow(TlogInvalid);
        }
        if (proof.length > 0) {
          const flipped = proof.map(h => h.slice());
          flipped[0][0] ^= 1;
          await expect(verifyInclusion(tree[m], BigInt(m), BigInt(n), flipped, root)).rejects.toThrow(TlogInvalid);
        }
        await expect(verifyInclusion(tree[m], BigInt(n), BigInt(n), proof, root)).rejects.toThrow(TlogInvalid);
        await expect(verifyInclusion(tree[m], BigInt(m), BigInt(n), [...proof, root], root)).rejects.toThrow(TlogInvalid);
      }
    }
  });

  it('parses a tlog-proof strictly and reads the log key as NoteVerifier.parse does', async () => {
    const valid = expand(corpus.cases.find(c => c.name === 'valid')!.bundle);
    const proof = parseProof(valid.certificate_entry.proof);
    expect(proof.hashes.every(h => h.length === 32)).toBe(true);
    expect(() => parseProof(valid.certificate_entry.proof.replace('index ', 'index 0'))).toThrow(TlogInvalid);
    expect(() => parseProof(42)).toThrow(TlogInvalid);
    const log = await loadLogKey(corpus.log_key);
    expect(log.name).toBe(corpus.log_key.split('+')[0]);
    const [name, id, material] = corpus.log_key.split('+');
    await expect(loadLogKey(`${name}+00000000+${material}`)).rejects.toThrow(KeyError);
    await expect(loadLogKey(`${name}+${id}+${material.slice(1)}`)).rejects.toThrow(KeyError);
    await expect(loadLogKey('')).rejects.toThrow(KeyError);
    expect(decodeBase64('QQ==')).toEqual(Uint8Array.of(0x41));
    expect(decodeBase64('QQ')).toBeNull();
  });

  it('digests an envelope as the certificate entry records it', async () => {
    const valid = expand(corpus.cases.find(c => c.name === 'valid')!.bundle);
    const entry = JSON.parse(Buffer.from(valid.certificate_entry.entry, 'base64').toString('utf-8'));
    expect(await envelopeDigest(valid.envelope)).toBe(entry.body.envelope_digest);
  });
});

describe('a bundle in the viewer', () => {
  const valid = () => expand(corpus.cases.find(c => c.name === 'valid')!.bundle);
  const keys = (log: string | null) =>
    ({
      load: () => loadTrustedKey(corpus.issuer_pem),
      loadLogKey: async () => (log === null ? null : loadLogKey(log)),
      loadWitnesses: async () => NO_WITNESSES
    }) as unknown as TrustedKeySource;

  it('is verified by the browser with both trusted keys; a server without a log key skips it', async () => {
    const text = JSON.stringify(valid());
    expect(isBundle(JSON.parse(text))).toBe(true);
    const skipped = { skipped: 'no trusted log key is configured on the Jupyter server' };
    const asked = vi.spyOn(server, 'verifyOnServer').mockResolvedValue(skipped);
    const outcomes = await verifyBoth(text, keys(corpus.log_key));
    expect(asked).toHaveBeenCalledWith(text); // the server is asked: it says why it did not check
    expect('report' in outcomes[0] && outcomes[0].report.ok).toBe(true);
    expect(outcomes[1]).toEqual(skipped);
    expect(bothPass(outcomes)).toBe(true);
    // a server with the log key checks it too, and both must pass
    const python = corpus.cases.find(c => c.name === 'valid')!.python;
    asked.mockResolvedValue({ report: python as VerifyReport });
    const both = await verifyBoth(text, keys(corpus.log_key));
    expect(both[1]).toEqual({ report: python });
    expect(bothPass(both)).toBe(true);
    asked.mockResolvedValue({ report: { ...python, ok: false } as VerifyReport });
    expect(bothPass(await verifyBoth(text, keys(corpus.log_key)))).toBe(false);
    asked.mockRestore();
  });

  it('fails without a log key, and a tampered bundle fails', async () => {
    const [browser] = await verifyBoth(JSON.stringify(valid()), keys(null));
    expect(browser).toEqual({ error: 'no trusted log key is configured (Settings → Replay Enclave)' });
    const outcomes = await verifyBoth(JSON.stringify(expand(corpus.cases.find(c => c.name === 'proof cut short')!.bundle)), keys(corpus.log_key));
    expect(bothPass(outcomes)).toBe(false);
  });

  it('shows the bundle by its envelope', () => {
    installFakeDom();
    const bundle = valid();
    const shown = renderEnvelope(bundle);
    const plain = renderEnvelope(bundle.envelope);
    expect(shown.kind).toBe('certificate');
    expect(fake(shown.node).textContent).toBe(fake(plain.node).textContent);
  });
});
