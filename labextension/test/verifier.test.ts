import { describe, expect, it } from 'vitest';

import { decodeCanonicalBase64, encodeBase64 } from '../src/verify/base64';
import { canonicalJson } from '../src/verify/canonical';
import { KeyError, loadTrustedKey } from '../src/verify/key';
import { parseEnvelopeText, verifyEnvelope, VerifyReport } from '../src/verify/verifier';
import { Envelope, golden, newSigner, pythonReports, signed, statementOf } from './fixtures';

const firstFailure = (report: VerifyReport) => report.checks.find(c => !c.ok)?.name ?? null;
const clone = (e: Envelope): Envelope => JSON.parse(JSON.stringify(e));

type Case = { name: string; envelope: unknown; pem: string; fails: string | null };

async function cases(): Promise<Case[]> {
  const v1 = golden('v1');
  const v2 = golden('v2');
  const out: Case[] = [
    { name: 'golden v2', envelope: v2.envelope, pem: v2.pem, fails: null },
    { name: 'golden v1', envelope: v1.envelope, pem: v1.pem, fails: null }
  ];

  const flipped = clone(v2.envelope);
  const bytes = decodeCanonicalBase64(flipped.payload)!;
  bytes[200] ^= 0x01;
  flipped.payload = encodeBase64(bytes);
  out.push({ name: 'payload byte flipped', envelope: flipped, pem: v2.pem, fails: 'signature' });

  const swapped = clone(v2.envelope);
  swapped.signatures = clone(v1.envelope).signatures;
  out.push({ name: 'signature swapped', envelope: swapped, pem: v2.pem, fails: 'signature' });

  const stranger = await newSigner();
  out.push({ name: 'wrong key', envelope: v2.envelope, pem: stranger.pem, fails: 'signature' });

  const retyped = clone(v2.envelope);
  retyped.payloadType = 'application/json';
  out.push({ name: 'payloadType changed', envelope: retyped, pem: v2.pem, fails: 'envelope' });

  const extra = { ...clone(v2.envelope), note: 'x' };
  out.push({ name: 'extra envelope key', envelope: extra, pem: v2.pem, fails: 'envelope' });

  const padded = clone(v2.envelope);
  padded.payload = padded.payload + '\n';
  out.push({ name: 'non-canonical base64', envelope: padded, pem: v2.pem, fails: 'envelope' });

  out.push({ name: 'not JSON at all', envelope: parseEnvelopeText('{"payload": '), pem: v2.pem, fails: 'envelope' });

  // predicate rules, on statements signed by a key the reviewer trusts
  const issuer = await newSigner();
  const base = statementOf(v2.envelope);
  base.predicate.issuer = issuer.keyid;
  out.push({ name: 're-signed, rules hold', envelope: await signed(issuer, base), pem: issuer.pem, fails: null });

  const otherIssuer = structuredClone(base);
  otherIssuer.predicate.issuer = stranger.keyid;
  out.push({ name: 'predicate.issuer is not the signer', envelope: await signed(issuer, otherIssuer), pem: issuer.pem, fails: 'statement' });

  const twoSubjects = structuredClone(base);
  twoSubjects.subject = [...base.subject, { name: 'specimen:other', digest: {} }];
  out.push({ name: 'two subjects', envelope: await signed(issuer, twoSubjects), pem: issuer.pem, fails: 'statement' });

  const notSpecimen = structuredClone(base);
  notSpecimen.subject[0].name = 'audit:au-1';
  out.push({ name: 'subject is not a specimen', envelope: await signed(issuer, notSpecimen), pem: issuer.pem, fails: 'statement' });

  const unknownType = structuredClone(base);
  unknownType.predicateType = 'https://replay-enclave.dev/certificate/v9';
  out.push({ name: 'unknown predicate type', envelope: await signed(issuer, unknownType), pem: issuer.pem, fails: 'statement' });

  const wrongRate = structuredClone(base);
  wrongRate.predicate.effect.flip_rate = 0.05;
  out.push({ name: 'flip rate is not flips out of N', envelope: await signed(issuer, wrongRate), pem: issuer.pem, fails: 'predicate' });

  const relabelled = structuredClone(base);
  relabelled.predicate.classification = 'equivalent';
  out.push({ name: 'label does not follow', envelope: await signed(issuer, relabelled), pem: issuer.pem, fails: 'predicate' });

  const extraKey = structuredClone(base);
  extraKey.predicate.note = 'x';
  out.push({ name: 'predicate has an unknown key', envelope: await signed(issuer, extraKey), pem: issuer.pem, fails: 'predicate' });

  const tooManyFlips = structuredClone(base);
  tooManyFlips.predicate.effect.flips = base.predicate.samples.count + 1;
  out.push({ name: 'flips beyond the samples', envelope: await signed(issuer, tooManyFlips), pem: issuer.pem, fails: 'predicate' });

  out.push({
    name: 'payload not canonical',
    envelope: await signed(issuer, base, JSON.stringify(base, null, 1)),
    pem: issuer.pem,
    fails: 'statement'
  });
  out.push({
    name: 'payload not JSON',
    envelope: await signed(issuer, base, '{"_type": NaN}'),
    pem: issuer.pem,
    fails: 'statement'
  });
  return out;
}

describe('browser verifier', () => {
  it('passes both goldens with every named check', async () => {
    for (const version of ['v1', 'v2'] as const) {
      const { envelope, pem } = golden(version);
      const report = await verifyEnvelope(envelope, await loadTrustedKey(pem));
      expect(report.ok).toBe(true);
      expect(report.checks.map(c => [c.name, c.ok])).toEqual([
        ['envelope', true],
        ['signature', true],
        ['statement', true],
        ['predicate', true]
      ]);
      expect(report.checks[2].detail).toBe(
        `in-toto Statement v1 (certificate ${version}) about specimen:spc-procurement-0001`
      );
      expect(report.checks[3].detail).toBe(`matches the certificate ${version} schema and rules`);
    }
  });

  it('fails every tamper class at the expected check, and the later ones do not run', async () => {
    for (const c of await cases()) {
      const report = await verifyEnvelope(c.envelope, await loadTrustedKey(c.pem));
      expect([c.name, firstFailure(report)]).toEqual([c.name, c.fails]);
      const index = report.checks.findIndex(check => !check.ok);
      if (index >= 0) {
        expect(report.checks.slice(index + 1).every(check => check.detail === 'not run')).toBe(true);
      }
    }
  });

  it('agrees with the Python verifier check by check, details included', async () => {
    const all = await cases();
    const python = pythonReports(all.map(c => ({ envelope: c.envelope, pem: c.pem })));
    for (const [i, c] of all.entries()) {
      const browser = await verifyEnvelope(c.envelope, await loadTrustedKey(c.pem));
      expect([c.name, browser]).toEqual([c.name, python[i]]);
    }
  });

  it('never echoes envelope content in a failure', async () => {
    const { envelope, pem } = golden('v2');
    const canary = 'CANARY-7f3a-verify';
    const tampered = { ...clone(envelope), payloadType: canary };
    const report = await verifyEnvelope(tampered, await loadTrustedKey(pem));
    expect(JSON.stringify(report)).not.toContain(canary);
  });

  it('refuses a key that is not an Ed25519 PEM public key', async () => {
    await expect(loadTrustedKey('ssh-ed25519 AAAA')).rejects.toThrow(KeyError);
    const ec = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign'])) as CryptoKeyPair;
    const spki = new Uint8Array(await crypto.subtle.exportKey('spki', ec.publicKey));
    const pem = `-----BEGIN PUBLIC KEY-----\n${encodeBase64(spki)}\n-----END PUBLIC KEY-----\n`;
    await expect(loadTrustedKey(pem)).rejects.toThrow('the issuer key is not Ed25519');
  });
});

describe('canonical JSON and base64', () => {
  it('sorts members by UTF-16 code units and writes numbers as ECMAScript does', () => {
    expect(canonicalJson({ b: 1, a: [1e21, 0.1, -0], '\u00e9': 'é', A: null })).toBe(
      '{"A":null,"a":[1e+21,0.1,0],"b":1,"é":"é"}'
    );
  });

  it('accepts one spelling per byte string', () => {
    expect(decodeCanonicalBase64('AAE=')).toEqual(new Uint8Array([0, 1]));
    expect(decodeCanonicalBase64('AAE')).toEqual(new Uint8Array([0, 1]));
    expect(decodeCanonicalBase64('AAF=')).toBeNull();
    expect(decodeCanonicalBase64('AA E=')).toBeNull();
    expect(decodeCanonicalBase64('-_8=')).toEqual(new Uint8Array([0xfb, 0xff]));
  });
});
