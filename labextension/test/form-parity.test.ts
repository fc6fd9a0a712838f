/**
 * Parity with the service, seeded: 600 audit request bodies (the two the panel sends,
 * each with one or two members replaced by an attacker's value) get the same answer —
 * accepted, or refused with the same code — from the browser's ``checkAuditBody`` and
 * from the service's own ``AuditBody`` model and admission check run in Python on the
 * same JSON text. (A boolean tolerance, once coerced to 1.0 by the service, is refused
 * by both. A cut name, ``from_cut``, is held to the service's pattern by both: every
 * base with each of a dozen names, and the names among the attacker's values.)
 */

import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { checkAuditBody } from '../src/enclave/validate';

const REPO = resolve(__dirname, '..', '..');

const BASES: Record<string, unknown>[] = [
  { specimen_id: 'sp-1', strategy: 'revision', revision: 'model=r2', samples: 30, seed: 1, purpose: 'Dispute review' },
  { specimen_id: 'sp-1', strategy: 'perturb', call_id: 'main/decider#0', field: '/confidence', delta: -0.05, samples: 20, seed: 1, purpose: 'sensitivity', policy_id: 'p.1' }
];

const VALUES: unknown[] = [
  '1', '', ' ', '\u200b', '\x00', 'a\x00', '\u202e', 'line\nbreak', '\t', 'ok', 'model=r2', '=r2', 'model=',
  '/a', '/', '//a', '/a~2', 'a', 'x'.repeat(129), 'x'.repeat(257), 'x'.repeat(501), '😀'.repeat(500), '\u2028',
  true, false, null, 0, 1, -1, 2, 1.5, 1e6, 1e6 + 1, -1e6, 5e-324, -2.2e-308, 2.2250738585072014e-308, 1e-310,
  100000, 100001, 2 ** 53 - 1 - 100000, 2 ** 53, [], {}, { score: 0.1 }, { score: true }, { a: 'exact' },
  'nullify', 'replace', 'perturb', 'revision', 'REVISION', 'swap', 'before-drop', 'a/b',
  'coarse', 'per-sample', 'Per-Sample'
];
const CUT_NAMES: unknown[] = [
  'before-drop', 'v1.2:cut_a', 'x'.repeat(64), 'x'.repeat(65), '', '-lead', 'a/b', 'a#0', 'a b',
  'before-drop\n', '\u00e9t\u00e9', null, 5, true, ['before-drop']
];
const KEYS = ['specimen_id', 'strategy', 'call_id', 'field', 'value', 'delta', 'revision', 'samples', 'seed', 'tolerances', 'purpose', 'policy_id', 'from_cut', 'detail', 'extra'];

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function cases(n: number): string[] {
  const random = mulberry32(20261130);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)];
  const out: string[] = BASES.map(b => JSON.stringify(b));
  for (const delta of [5e-324, -2.2e-308, 1e-310]) {
    out.push(JSON.stringify({ ...BASES[1], delta }));
  }
  for (const base of BASES) {
    for (const from_cut of CUT_NAMES) {
      out.push(JSON.stringify({ ...base, from_cut }));
    }
  }
  while (out.length < n) {
    const body: Record<string, unknown> = { ...pick(BASES) };
    for (let i = 0; i < 1 + Math.floor(random() * 2); i++) {
      const key = pick(KEYS);
      if (random() < 0.15) {
        delete body[key];
      } else {
        body[key] = pick(VALUES);
      }
    }
    out.push(JSON.stringify(body));
  }
  return out;
}

/** The service's answer to each body: "ok" or the error code its edge would send. */
function serviceCodes(texts: string[]): string[] {
  const script = [
    'import json, sys, types',
    'from pydantic import ValidationError',
    'from enclave._errors import BadInput',
    'from enclave.governance._intake import NoEffect, _check_effect',
    'from enclave.service._models import AuditBody',
    'out = []',
    'for text in json.load(sys.stdin):',
    '    try:',
    '        body = AuditBody.model_validate(json.loads(text))',
    '        _check_effect(types.SimpleNamespace(delta=body.delta))',
    '        out.append("ok")',
    '    except ValidationError:',
    '        out.append("invalid_request")',
    '    except BadInput as exc:',
    '        out.append(exc.code)',
    'json.dump(out, sys.stdout)'
  ].join('\n');
  const stdout = execFileSync(process.env.PYTHON ?? 'python', ['-c', script], { cwd: REPO, input: JSON.stringify(texts) });
  return JSON.parse(stdout.toString('utf-8'));
}

describe('the browser refuses what the service refuses, with its code', () => {
  const texts = cases(600);
  const expected = serviceCodes(texts);

  it('covers acceptances and each code', () => {
    expect(new Set(expected)).toEqual(new Set(['ok', 'bad_input', 'invalid_request', 'no_effect']));
  });

  const answers = texts.map((text, i) => ({
    text,
    service: expected[i],
    browser: checkAuditBody(JSON.parse(text))?.code ?? 'ok'
  }));
  it('agrees on every body', () => {
    const disagreements = answers.filter(c => c.service !== c.browser);
    expect(disagreements).toEqual([]);
  });
});
