/** Goldens from tests/golden and the tamper classes a verifier must catch. */

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { encodeBase64 } from '../src/verify/base64';
import { canonicalJson } from '../src/verify/canonical';
import { pae, VerifyReport } from '../src/verify/verifier';

export const REPO = resolve(__dirname, '..', '..');
const GOLDEN = resolve(REPO, 'tests', 'golden');

export type Envelope = { payload: string; payloadType: string; signatures: Array<{ keyid?: string; sig: string }> };

export function golden(version: 'v1' | 'v2' | 'v3'): { envelope: Envelope; pem: string } {
  return {
    envelope: JSON.parse(readFileSync(resolve(GOLDEN, `certificate_${version}.dsse.json`), 'utf-8')),
    pem: readFileSync(resolve(GOLDEN, `certificate_${version}.pub.pem`), 'utf-8')
  };
}

export function statementOf(envelope: Envelope): Record<string, any> {
  return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf-8'));
}

export async function newSigner(): Promise<{ pem: string; keyid: string; sign: (payload: Uint8Array) => Promise<string> }> {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey('spki', pair.publicKey));
  const raw = await crypto.subtle.exportKey('raw', pair.publicKey);
  const keyid = 'sha256:' + Buffer.from(await crypto.subtle.digest('SHA-256', raw)).toString('hex');
  const pem = `-----BEGIN PUBLIC KEY-----\n${encodeBase64(spki)}\n-----END PUBLIC KEY-----\n`;
  const sign = async (payload: Uint8Array) =>
    encodeBase64(new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, pair.privateKey, pae('application/vnd.in-toto+json', payload))));
  return { pem, keyid, sign };
}

/** An envelope over ``statement`` (canonical unless ``text`` is given), signed by ``signer``. */
export async function signed(
  signer: Awaited<ReturnType<typeof newSigner>>,
  statement: unknown,
  text?: string
): Promise<Envelope> {
  const payload = new TextEncoder().encode(text ?? canonicalJson(statement));
  return {
    payload: encodeBase64(payload),
    payloadType: 'application/vnd.in-toto+json',
    signatures: [{ keyid: signer.keyid, sig: await signer.sign(payload) }]
  };
}

/** The Python offline verifier's report on each case, in one process: an envelope given
 * as a value, or as file text parsed by Python the way the server extension parses it. */
export function pythonReports(
  cases: Array<{ envelope: unknown; pem: string } | { text: string; pem: string }>
): VerifyReport[] {
  const script = [
    'import json, sys',
    'from jupyter_ext import verify_envelope_offline',
    'from ledger.certificates import load_public_key_pem',
    'out = []',
    'def envelope(case):',
    '    if "text" not in case:',
    '        return case["envelope"]',
    '    try:',
    '        return json.loads(case["text"])',
    '    except ValueError:',
    '        return None',
    'for case in json.load(sys.stdin):',
    '    report = verify_envelope_offline(envelope(case), load_public_key_pem(case["pem"].encode()))',
    '    out.append({"ok": report.ok, "checks": [c.to_dict() for c in report.checks], "finding": report.finding})',
    'json.dump(out, sys.stdout)'
  ].join('\n');
  const stdout = execFileSync(process.env.PYTHON ?? 'python', ['-c', script], {
    cwd: REPO,
    input: JSON.stringify(cases)
  });
  return JSON.parse(stdout.toString('utf-8'));
}

/** The signed release report from tests/golden (scripts/export-release-report.py), or
 * the v1 report kept from before reports were tight. */
export function goldenReport(version: 'v1' | 'v2' = 'v2'): { envelope: Envelope; pem: string } {
  const name = version === 'v2' ? 'release_report' : 'release_report_v1';
  return {
    envelope: JSON.parse(readFileSync(resolve(GOLDEN, `${name}.dsse.json`), 'utf-8')),
    pem: readFileSync(resolve(GOLDEN, `${name}.pub.pem`), 'utf-8')
  };
}

/** mulberry32: a small seeded generator, so every run judges the same cases. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
