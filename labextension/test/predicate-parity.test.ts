/**
 * The browser's predicate check judges as ``ledger.certificates.predicate_problems`` does:
 * on every case of the committed corpus (goldens changed by a few operations; written by
 * ``scripts/export-predicate-corpus.py`` with the Python verdicts), the TypeScript port
 * gives the same verdict, raises where Python raises, and names the same first problem;
 * and on every case that passes, states the same finding, word for word.
 */

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { finding, predicateProblems, Unevaluable } from '../src/predicate';

type Path = Array<string | number>;
interface Case {
  version: 'v1' | 'v2' | 'v3';
  kind: string;
  name: string;
  ops: Array<[Path, unknown]>;
  raises: boolean;
  problems: string[];
  finding?: string;
}
interface Corpus {
  types: Record<string, string>;
  goldens: Record<string, unknown>;
  delete: unknown;
  cases: Case[];
}

const corpus: Corpus = JSON.parse(readFileSync(resolve(__dirname, 'fixtures', 'predicate-corpus.json'), 'utf-8'));
const DELETE = JSON.stringify(corpus.delete);

function apply(golden: unknown, ops: Array<[Path, unknown]>): unknown {
  let out = structuredClone(golden);
  for (const [path, value] of ops) {
    if (path.length === 0) {
      out = structuredClone(value);
      continue;
    }
    let node = out as Record<string | number, unknown>;
    for (const part of path.slice(0, -1)) {
      node = node[part] as Record<string | number, unknown>;
    }
    const last = path[path.length - 1];
    if (JSON.stringify(value) === DELETE) {
      if (Array.isArray(node)) {
        node.splice(last as number, 1);
      } else {
        delete node[last];
      }
    } else {
      node[last] = structuredClone(value);
    }
  }
  return out;
}

function judge(c: Case): { raises: boolean; problems: string[] } {
  const predicate = apply(corpus.goldens[c.version], c.ops);
  try {
    return { raises: false, problems: predicateProblems(predicate, corpus.types[c.version]) };
  } catch (error) {
    if (!(error instanceof Unevaluable)) {
      throw error;
    }
    return { raises: true, problems: [] };
  }
}

describe('predicate parity with ledger.certificates.predicate_problems', () => {
  it('covers every kind of case, passing and failing, on every version', () => {
    const seen = new Set(corpus.cases.map(c => `${c.version} ${c.kind} ${c.raises} ${c.problems.length > 0}`));
    for (const version of ['v1', 'v2', 'v3']) {
      for (const kind of ['schema', 'rule', 'random']) {
        expect(seen.has(`${version} ${kind} false true`)).toBe(true);
        expect(seen.has(`${version} ${kind} false false`)).toBe(true);
      }
    }
    expect(seen.has('v2 figures false false') && seen.has('v2 figures false true')).toBe(true);
    expect(seen.has('v3 figures false false')).toBe(true);
    expect(seen.has('v2 rule true false')).toBe(true);
    expect(corpus.cases.length).toBeGreaterThan(3000);
  });

  it('gives the same verdict and the same first problem on every case', () => {
    const differ: string[] = [];
    for (const c of corpus.cases) {
      const browser = judge(c);
      const same =
        browser.raises === c.raises &&
        browser.problems.length > 0 === c.problems.length > 0 &&
        browser.problems[0] === c.problems[0];
      if (!same) {
        differ.push(`${c.version} ${c.name}: python ${JSON.stringify(c.problems.slice(0, 2))} raises=${c.raises}, browser ${JSON.stringify(browser.problems.slice(0, 2))} raises=${browser.raises}`);
      }
    }
    expect(differ).toEqual([]);
  });

  it('gives the same problem list, rules and schema alike, on every case', () => {
    const differ = corpus.cases.filter(c => JSON.stringify(judge(c).problems) !== JSON.stringify(c.problems));
    expect(differ.map(c => `${c.version} ${c.name}`)).toEqual([]);
  });

  it('states the same finding on every case that passes, word for word', () => {
    const passing = corpus.cases.filter(c => !c.raises && c.problems.length === 0);
    expect(passing.every(c => typeof c.finding === 'string')).toBe(true);
    const labels = new Set(passing.map(c => (apply(corpus.goldens[c.version], c.ops) as { classification: string }).classification));
    for (const label of ['influential', 'equivalent', 'inconclusive', 'baseline-not-reproduced', 'observable-only']) {
      expect(labels.has(label)).toBe(true);
    }
    const differ = passing.filter(c => finding(apply(corpus.goldens[c.version], c.ops), corpus.types[c.version]) !== c.finding);
    expect(differ.map(c => `${c.version} ${c.name}`)).toEqual([]);
  });
});
