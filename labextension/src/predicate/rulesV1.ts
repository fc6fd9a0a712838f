/**
 * The rules a schema cannot say, shared by v1 and v2 (``ledger/certificates/_schema.py``
 * ``_rule_problems``), checked on a predicate that already matches its schema:
 *
 * * ``disclosure.bits`` is the sum of its terms (to 0.01 bit); the baseline's score
 *   ``delta`` lies on the ``disclosure.resolution`` grid;
 * * ``unchanged_digest_equal`` is true exactly when the two digests are equal;
 * * ``seeds`` spells ``seed..seed+count-1``;
 * * an effect only after a reproduced baseline, an exact intervention, a passed placebo,
 *   with samples, and never for an observable-only audit; its histogram's edges bound
 *   its counts in order and the counts sum to ``count``;
 * * (v1 only) the effect's deltas on the grid, its intervals holding their estimates.
 */

import { fsum, isClose, pyRound, sum } from './numbers';

// the predicate matched its schema: its shape is known, its values are not
export type Predicate = Record<string, any>;

export function onGrid(value: number, resolution: number): boolean {
  if (Math.abs(value) === 1) {
    return true;
  }
  const steps = value / resolution;
  return Math.abs(steps - pyRound(steps)) <= 1e-6;
}

function disclosureProblems(p: Predicate): string[] {
  const problems: string[] = [];
  const disclosure = p.disclosure;
  const total = fsum(disclosure.terms.map((t: Predicate) => t.bits as number));
  if (!isClose(total, disclosure.bits, 1e-9, 0.01)) {
    problems.push('/disclosure/bits: is not the sum of its terms');
  }
  const layers = p.baseline === null ? {} : p.baseline.layers;
  const score = layers.score ?? {};
  const delta = score.delta;
  if (delta !== undefined && delta !== null && !onGrid(delta, disclosure.resolution)) {
    problems.push('/baseline/layers/score/delta: is not on the declared resolution');
  }
  return problems;
}

function sortedEqual(a: string[], b: string[]): boolean {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** The v1 rules; with ``v1 = false`` only those v2 keeps (v2 checks the effect's
 * figures itself), the histogram only when there is one. */
export function ruleProblems(p: Predicate, v1 = true): string[] {
  const problems = disclosureProblems(p);
  const { intervention, samples, effect } = p;
  if (intervention !== null) {
    const same = intervention.unchanged_digest_before === intervention.unchanged_digest_after;
    if (intervention.unchanged_digest_equal !== same) {
      problems.push('/intervention/unchanged_digest_equal: contradicts the digests');
    }
  }
  if (samples !== null) {
    const [first, last] = (samples.seeds as string).split('..');
    const seed = BigInt(samples.seed);
    if (BigInt(first) !== seed || BigInt(last) !== seed + BigInt(samples.count) - 1n) {
      problems.push('/samples/seeds: does not spell seed..seed+count-1');
    }
  }
  if (effect === null) {
    return problems;
  }
  const baseline = p.baseline;
  if (baseline === null || baseline.reproduced !== true) {
    problems.push('/effect: reported without a reproduced baseline');
  }
  if (intervention === null || !intervention.unchanged_digest_equal) {
    problems.push('/effect: reported without unchanged-digest equality');
  } else if (!sortedEqual(intervention.actual_changes, intervention.declared_changes)) {
    problems.push('/effect: reported although actual changes differ from declared');
  }
  if (p.placebo === null || p.placebo.passed !== true) {
    problems.push('/effect: reported without a passed placebo');
  }
  if (p.auditability.class !== 'counterfactual-admissible') {
    problems.push('/effect: reported for an observable-only audit');
  }
  const histogram = effect.histogram ?? null; // v3 has none
  if (samples === null) {
    problems.push('/effect: reported without samples');
  }
  if (histogram !== null) {
    const edges: number[] = histogram.edges;
    const counts: number[] = histogram.counts;
    if (counts.length !== edges.length - 1 || edges.some((a, i) => i + 1 < edges.length && a >= edges[i + 1])) {
      problems.push("/effect/histogram: edges do not bound the counts' bins in order");
    }
    if (samples !== null && sum(counts) !== samples.count) {
      problems.push('/effect/histogram: counts do not sum to the sample count');
    }
  }
  if (!v1) {
    return problems;
  }
  const resolution = p.disclosure.resolution;
  if (![effect.mean_delta, ...effect.delta_interval].every((v: number) => onGrid(v, resolution))) {
    problems.push('/effect: a delta is not on the declared resolution');
  }
  let [lo, hi] = effect.delta_interval;
  if (!(lo <= effect.mean_delta && effect.mean_delta <= hi)) {
    problems.push('/effect/delta_interval: does not hold the mean delta');
  }
  [lo, hi] = effect.flip_interval;
  if (!(lo <= effect.flip_rate && effect.flip_rate <= hi)) {
    problems.push('/effect/flip_interval: does not hold the flip rate');
  }
  return problems;
}
