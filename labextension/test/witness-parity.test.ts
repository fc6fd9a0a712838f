/**
 * Witness cosignatures in the browser, as ``verify --witness KEY… --quorum K`` and the
 * Jupyter server's ``witness_keys`` require them: bundles of both kinds from the parity
 * corpora, cosigned here by fixed witness keys (C2SP tlog-cosignature), each judged by
 * the browser and by ``verify_bundle`` / ``verify_report_bundle`` now with the same
 * witnesses and quorum — the same checks, with the same sentences.
 */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { TrustedKeySource } from '../src/trustedKey';
import { encodeBase64 } from '../src/verify/base64';
import { verifyBundle } from '../src/verify/bundle';
import { KeyError, loadTrustedKey } from '../src/verify/key';
import { NO_WITNESSES, Witnesses } from '../src/verify/proven';
import { verifyReportBundle } from '../src/verify/reportBundle';
import { concat, loadLogKey, loadWitnessKey, noteKeyId, parseProof } from '../src/verify/tlog';
import { VerifyReport } from '../src/verify/verifier';
import { REPO } from './fixtures';

type Checks = { ok: boolean; checks: Array<{ name: string; ok: boolean; detail: string }> };

const fixture = (name: string): any => JSON.parse(readFileSync(resolve(__dirname, 'fixtures', name), 'utf-8'));
const certificates = fixture('bundle-corpus.json');
const reports = fixture('report-bundle-corpus.json');

function expandCertificate(value: any): any {
  const out = structuredClone(value);
  if (typeof out.envelope === 'string' && out.envelope.startsWith('@')) {
    out.envelope = structuredClone(certificates.envelopes[out.envelope.slice(1)]);
  }
  return out;
}

function expandReport(value: unknown): any {
  if (typeof value === 'string' && value.startsWith('@shared:')) {
    return structuredClone(reports.shared[value.slice('@shared:'.length)]);
  }
  if (Array.isArray(value)) {
    return value.map(expandReport);
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandReport(v)]));
  }
  return value;
}

const validCertificate = (): any => expandCertificate(certificates.cases.find((c: any) => c.name === 'valid').bundle);
const validReport = (): any => expandReport(reports.cases.find((c: any) => c.name === 'valid').bundle);

const TIME = 1_765_000_000n;

interface Witness {
  name: string;
  vkey: string;
  sign: (message: Uint8Array) => Promise<Uint8Array>;
}

/** A witness with a fixed Ed25519 seed (PKCS#8 wraps the 32 seed bytes). */
async function witness(name: string, seed: number): Promise<Witness> {
  const pkcs8 = concat(Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]), new Uint8Array(32).fill(seed));
  const key = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, true, ['sign']);
  const jwk = await crypto.subtle.exportKey('jwk', key);
  const raw = Uint8Array.from(Buffer.from(jwk.x!, 'base64url'));
  const id = await noteKeyId(name, raw, 0x04);
  const vkey = `${name}+${Buffer.from(id).toString('hex')}+${encodeBase64(concat(Uint8Array.of(0x04), raw))}`;
  return {
    name,
    vkey,
    sign: async (message: Uint8Array) => {
      const signature = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key, message));
      const time = new Uint8Array(8);
      new DataView(time.buffer).setBigUint64(0, TIME);
      return concat(id, time, signature);
    }
  };
}

/** ``proof`` with ``w``'s cosignature line on its checkpoint; ``corrupt``: a byte of it flipped. */
async function cosigned(proof: string, w: Witness, corrupt = false): Promise<string> {
  const note = parseProof(proof).note;
  const text = note.slice(0, note.lastIndexOf('\n\n')) + '\n';
  const message = new TextEncoder().encode(`cosignature/v1\ntime ${TIME}\n${text}`);
  const blob = await w.sign(message);
  if (corrupt) {
    blob[20] ^= 1;
  }
  return `${proof}\u2014 ${w.name} ${encodeBase64(blob)}\n`;
}

/** Every proof of a bundle of either kind, in place. */
function proofsOf(bundle: any): Array<{ proof: string }> {
  if (Array.isArray(bundle.certificates)) {
    return [bundle.report_entry, ...bundle.certificates.flatMap(proofsOf)];
  }
  return [bundle.specimen_entry, bundle.certificate_entry];
}

async function cosignAll(bundle: any, by: Witness[], corrupt = false): Promise<any> {
  const out = structuredClone(bundle);
  for (const part of proofsOf(out)) {
    for (const w of by) {
      part.proof = await cosigned(part.proof, w, corrupt);
    }
  }
  return out;
}

interface Case {
  kind: 'certificate' | 'report';
  bundle: unknown;
  witnesses: string[];
  quorum: number;
}

function python(cases: Case[]): Checks[] {
  const script = [
    'import json, sys',
    'from ledger.certificates import load_public_key_pem, verify_bundle',
    'from ledger.certificates.tlog import NoteVerifier, WitnessVerifier',
    'from tests.unit.release.report_bundle_corpus import python_checks',
    'from ledger.certificates import verify_report_bundle',
    'data = json.load(sys.stdin)',
    'out = []',
    'for case in data["cases"]:',
    '    corpus = data[case["kind"]]',
    '    issuer = load_public_key_pem(corpus["pem"].encode())',
    '    log = NoteVerifier.parse(corpus["log"])',
    '    ws = [WitnessVerifier.parse(k) for k in case["witnesses"]]',
    '    if case["kind"] == "certificate":',
    '        r = verify_bundle(case["bundle"], public_key=issuer, log_key=log, witnesses=ws, quorum=case["quorum"])',
    '        out.append({"ok": r.ok, "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in r.checks]})',
    '    else:',
    '        cs = verify_report_bundle(case["bundle"], public_key=issuer, log_key=log, witnesses=ws, quorum=case["quorum"])',
    '        out.append({"ok": all(ok for _, ok, _ in cs), "checks": [{"name": n, "ok": ok, "detail": d} for n, ok, d in cs]})',
    'json.dump(out, sys.stdout)'
  ].join('\n');
  const input = {
    cases,
    certificate: { pem: certificates.issuer_pem, log: certificates.log_key },
    report: { pem: reports.issuer_pem, log: reports.log_key }
  };
  const stdout = execFileSync(process.env.PYTHON ?? 'python', ['-c', script], {
    cwd: REPO,
    env: { ...process.env, PYTHONPATH: REPO },
    input: JSON.stringify(input),
    maxBuffer: 256 << 20
  });
  return JSON.parse(stdout.toString('utf-8'));
}

async function browser(c: Case): Promise<VerifyReport> {
  const corpus = c.kind === 'certificate' ? certificates : reports;
  const issuer = await loadTrustedKey(corpus.issuer_pem);
  const log = await loadLogKey(corpus.log_key);
  const witnesses: Witnesses = { keys: await Promise.all(c.witnesses.map(loadWitnessKey)), quorum: c.quorum };
  const verify = c.kind === 'certificate' ? verifyBundle : verifyReportBundle;
  return verify(c.bundle, issuer, log, witnesses);
}

/** A certificate bundle's steps 1–4 word their details on each side (``_verify.py``, its
 * port ``_offline.py``), and so do the steps not run after a failure: their verdicts must
 * agree, and every other sentence. */
const ENVELOPE_STEPS = new Set(['envelope', 'signature', 'statement', 'predicate']);
const comparable = (r: Checks | VerifyReport): unknown => ({
  ok: r.ok,
  checks: r.checks.map(k => [k.name, k.ok, ENVELOPE_STEPS.has(k.name) || k.detail.startsWith('not run') ? null : k.detail])
});

describe('witness cosignatures, browser and Python alike', () => {
  it('require the quorum of trusted witnesses on every checkpoint, with the same sentences', { timeout: 120000 }, async () => {
    const w1 = await witness('witness.example/w1', 1);
    const w2 = await witness('witness.example/w2', 2);
    const cases: Array<Case & { expect: string }> = [];
    for (const [kind, valid] of [['certificate', validCertificate()], ['report', validReport()]] as const) {
      const one = await cosignAll(valid, [w1]);
      const both = await cosignAll(valid, [w1, w2]);
      cases.push(
        { kind, bundle: valid, witnesses: [], quorum: 0, expect: 'pass' },
        { kind, bundle: valid, witnesses: [w1.vkey], quorum: 1, expect: 'fail' },
        { kind, bundle: one, witnesses: [w1.vkey], quorum: 1, expect: 'pass' },
        { kind, bundle: one, witnesses: [w1.vkey, w2.vkey], quorum: 1, expect: 'pass' },
        { kind, bundle: one, witnesses: [w1.vkey, w2.vkey], quorum: 2, expect: 'fail' },
        { kind, bundle: both, witnesses: [w1.vkey, w2.vkey], quorum: 2, expect: 'pass' },
        { kind, bundle: await cosignAll(valid, [w1], true), witnesses: [w1.vkey], quorum: 1, expect: 'fail' },
        // a cosignature by a witness nobody trusts counts for nothing
        { kind, bundle: await cosignAll(valid, [w2]), witnesses: [w1.vkey], quorum: 1, expect: 'fail' }
      );
    }
    const judged = python(cases);
    const sentences = new Set<string>();
    for (const [i, c] of cases.entries()) {
      const mine = await browser(c);
      expect([i, comparable(mine)]).toEqual([i, comparable(judged[i])]);
      expect([i, mine.ok]).toEqual([i, c.expect === 'pass']);
      mine.checks.filter(k => !k.ok && k.detail !== 'not run').forEach(k => sentences.add(k.detail));
    }
    expect(sentences).toContain("a witness's cosignature does not verify");
    expect(sentences).toContain('cosigned by 0 of the witnesses, 1 required');
    expect(sentences).toContain('cosigned by 1 of the witnesses, 2 required');
  });

  it('reads a witness key as WitnessVerifier.parse does: a log key is not a witness key', async () => {
    const w1 = await witness('witness.example/w1', 1);
    expect((await loadWitnessKey(w1.vkey)).name).toBe('witness.example/w1');
    await expect(loadWitnessKey(certificates.log_key)).rejects.toThrow('the witness key is not an Ed25519 verifier key');
    await expect(loadLogKey(w1.vkey)).rejects.toThrow('the log key is not an Ed25519 verifier key');
  });
});

describe('the witnesses a user trusts', () => {
  const source = (values: Record<string, unknown>): TrustedKeySource =>
    new TrustedKeySource({ get: (key: string) => ({ composite: values[key] }) } as any, {} as any);

  it('are read from the settings, every one required unless a quorum says otherwise', async () => {
    const w1 = await witness('witness.example/w1', 1);
    const w2 = await witness('witness.example/w2', 2);
    expect(await source({ trustedWitnessKeys: [] }).loadWitnesses()).toEqual(NO_WITNESSES);
    const all = await source({ trustedWitnessKeys: [w1.vkey, ` ${w2.vkey} `], witnessQuorum: 0 }).loadWitnesses();
    expect([all.keys.map(k => k.name), all.quorum]).toEqual([['witness.example/w1', 'witness.example/w2'], 2]);
    const one = await source({ trustedWitnessKeys: [w1.vkey, w2.vkey], witnessQuorum: 1 }).loadWitnesses();
    expect(one.quorum).toBe(1);
    await expect(source({ trustedWitnessKeys: [w1.vkey], witnessQuorum: 2 }).loadWitnesses()).rejects.toThrow(KeyError);
    await expect(source({ trustedWitnessKeys: ['not a key'] }).loadWitnesses()).rejects.toThrow(KeyError);
  });
});
