/**
 * The browser's and the Python verifier's reports agree on mutated copies of the golden:
 * one character of the file changed at a seeded random position (payload, signature,
 * type, keys, JSON syntax), each case judged by both.
 */

import { describe, expect, it } from 'vitest';

import { loadTrustedKey } from '../src/verify/key';
import { parseEnvelopeText, verifyEnvelope } from '../src/verify/verifier';
import { generator, golden, newSigner, pythonReports, signed, statementOf } from './fixtures';


const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_"{}[],: \\';

describe('parity with the Python verifier', () => {
  it('reports the same checks on 300 one-character mutations of the golden', async () => {
    const { envelope, pem } = golden('v2');
    const text = JSON.stringify(envelope);
    const random = generator(20261130);
    const texts: string[] = [];
    for (let i = 0; i < 300; i++) {
      const at = Math.floor(random() * text.length);
      const ch = ALPHABET[Math.floor(random() * ALPHABET.length)];
      texts.push(text.slice(0, at) + ch + text.slice(at + 1));
    }
    const envelopes = texts.map(parseEnvelopeText);
    const python = pythonReports(texts.map(t => ({ text: t, pem })));
    const key = await loadTrustedKey(pem);
    const failures = new Set<string>();
    for (const [i, e] of envelopes.entries()) {
      const browser = await verifyEnvelope(e, key);
      expect([i, browser]).toEqual([i, python[i]]);
      failures.add(browser.checks.find(c => !c.ok)?.name ?? 'none');
    }
    // the cases reach more than one step: the comparison is not vacuous
    expect(failures.has('envelope') && failures.has('signature')).toBe(true);
  });

  it('reports the same checks on 300 mutated statements signed by a trusted key', async () => {
    const { envelope } = golden('v2');
    const issuer = await newSigner();
    const statement = statementOf(envelope);
    statement.predicate.issuer = issuer.keyid;
    const text = JSON.stringify(statement); // JSON.stringify keeps the canonical member order
    const random = generator(7);
    const cases = [];
    for (let i = 0; i < 300; i++) {
      const at = Math.floor(random() * text.length);
      const ch = ALPHABET[Math.floor(random() * ALPHABET.length)];
      const mutated = text.slice(0, at) + ch + text.slice(at + 1);
      cases.push({ envelope: await signed(issuer, null, mutated), pem: issuer.pem });
    }
    const python = pythonReports(cases);
    const key = await loadTrustedKey(issuer.pem);
    const failures = new Set<string>();
    for (const [i, c] of cases.entries()) {
      const browser = await verifyEnvelope(c.envelope, key);
      expect([i, browser]).toEqual([i, python[i]]);
      failures.add(browser.checks.find(check => !check.ok)?.name ?? 'none');
    }
    expect(failures.has('statement') && failures.has('none')).toBe(true);
  });
});
