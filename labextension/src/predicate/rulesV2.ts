/**
 * Rules of a v2 predicate beyond its schema (``ledger/certificates/_rules_v2.py``), in its
 * order, each as ``location: rule``:
 *
 * 1. the shared rules (``rulesV1``, v2 subset);
 * 2. the classification follows the effect and the auditability class;
 * 3. the effect's figures: numeric fields exactly for a numeric outcome, on the grid,
 *    intervals nested around the mean; ``flips`` out of N give the rate and the exact
 *    intervals (recomputed); rates are counts out of N; the score tolerance is the
 *    request's; ``mde.flip_rate`` is the one N implies; the label is ``effectLabel``;
 * 4.–5. per-sample rows and the recorded seed agree with the effect;
 * 6. served-by rows: one per (arm, call), each summing to N (the inference column, on
 *    every row or on none, counted in), served as allowed, and answered by inference only
 *    under a grant the ``inference`` section reports;
 * 7. a cut is named exactly when the request replays from it (``docs/cuts.md``);
 * 8. substitute answers to requests the record does not hold: a count exactly when
 *    boundaries are named, bounded by the served-by table; one the request does not
 *    declare authoritative
 *    caps the label at ``inconclusive``.
 */

import { clopperPearson } from './beta';
import { effectLabel, MIN_FLIPS } from './label';
import { isClose, pyRound } from './numbers';
import { flipMde } from './power';
import { onGrid, Predicate, ruleProblems } from './rulesV1';

const CLOSE = 1e-9;
const EFFECT_LABELS = ['influential', 'equivalent', 'inconclusive'];
export const SERVED_COLUMNS = ['record', 'substitute', 'intervention', 'unservable', 'unused', 'absent'];
export const INFERENCE_COLUMN = 'inference'; // present on every row, or on none

export function close(a: number, b: number): boolean {
  return isClose(a, b, CLOSE, CLOSE);
}

export function count(rate: number, n: number): number | null {
  const k = pyRound(rate * n);
  return close(k / n, rate) ? k : null;
}

export function classification(p: Predicate): string[] {
  const label = p.classification;
  const klass = p.auditability.class;
  const problems: string[] = [];
  if (EFFECT_LABELS.includes(label) !== (p.effect !== null)) {
    problems.push('/classification: an effect label needs an effect, and only it');
  }
  if ((label === 'observable-only') !== (klass === 'observable-only')) {
    problems.push('/auditability/class: contradicts the classification');
  }
  if ((label === 'baseline-not-reproduced') !== (klass === 'not-assessed')) {
    problems.push('/auditability/class: not-assessed is for an unreproduced baseline');
  }
  if (label === 'baseline-not-reproduced' && (p.baseline === null || p.baseline.reproduced !== false)) {
    problems.push('/classification: the baseline reproduced');
  }
  return problems;
}

function numeric(effect: Predicate, resolution: number): string[] {
  const isNumeric = effect.outcome === 'numeric';
  const fields = [
    effect.mean_delta,
    effect.delta_interval,
    effect.histogram,
    effect.equivalence.delta_interval,
    effect.mde.delta
  ];
  if (fields.some(value => (value === null) === isNumeric)) {
    return ['/effect/outcome: numeric fields must be present exactly for a numeric outcome'];
  }
  if (!isNumeric) {
    return [];
  }
  const problems: string[] = [];
  const mean: number = effect.mean_delta;
  const [lo, hi]: number[] = effect.delta_interval;
  const [eqLo, eqHi]: number[] = effect.equivalence.delta_interval;
  const ends = [mean, lo, hi, eqLo, eqHi, effect.mde.delta as number];
  if (!ends.every(v => onGrid(v, resolution))) {
    problems.push('/effect: a delta is not on the declared resolution');
  }
  if (!(lo <= eqLo && eqLo <= mean && mean <= eqHi && eqHi <= hi)) {
    problems.push('/effect/equivalence/delta_interval: is not nested around the mean');
  }
  if (effect.mde.delta < Math.min(1, effect.score_tolerance) - CLOSE) {
    problems.push('/effect/mde/delta: is below the score tolerance');
  }
  return problems;
}

export function isDict(value: unknown): value is Predicate {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The flip figures, rates and tolerances every effect carries (v2 and v3), with the
 * ``layers`` problems in their place among them. */
export function figures(p: Predicate, n: number, layers: string[]): string[] {
  const effect = p.effect;
  const problems: string[] = [];
  const k: number = effect.flips;
  const eq = effect.equivalence;
  if (k > n || !close(effect.flip_rate, k / n)) {
    problems.push('/effect/flip_rate: is not flips out of the sample count');
  }
  const exact = clopperPearson(k, n, effect.confidence);
  if (!effect.flip_interval.every((v: number, i: number) => close(v, exact[i]))) {
    problems.push('/effect/flip_interval: is not the exact interval for the flips');
  }
  if (!close(eq.flip_upper, clopperPearson(k, n, 1 - 2 * eq.alpha)[1])) {
    problems.push('/effect/equivalence/flip_upper: is not the one-sided bound');
  }
  for (const name of ['baseline_rate', 'intervened_rate']) {
    if (count(effect[name], n) === null) {
      problems.push(`/effect/${name}: is not a count out of the sample count`);
    }
  }
  problems.push(...layers);
  const tolerances = p.request.tolerances;
  const declared = isDict(tolerances) ? tolerances.score : undefined;
  // Python's isinstance(declared, int | float) admits booleans as 0 and 1
  if ((typeof declared === 'number' || typeof declared === 'boolean') && !close(Number(declared), effect.score_tolerance)) {
    problems.push("/effect/score_tolerance: differs from the request's");
  }
  const mde = flipMde(n, MIN_FLIPS, effect.mde.power);
  if ((mde === null) !== (effect.mde.flip_rate === null) || (mde !== null && !close(mde, effect.mde.flip_rate))) {
    problems.push('/effect/mde/flip_rate: is not the one the sample count implies');
  }
  return problems;
}

/** The classification the reported figures give (rule 3's last step, and 8.). */
export function label(p: Predicate): string[] {
  const effect = p.effect;
  const eq = effect.equivalence;
  const derived = effectLabel({
    deltaInterval: effect.delta_interval,
    equivalenceInterval: eq.delta_interval,
    scoreTolerance: effect.score_tolerance,
    flips: effect.flips,
    flipUpper: eq.flip_upper,
    flipTolerance: effect.flip_tolerance
  });
  const label = unauthorised(p).length > 0 ? 'inconclusive' : derived; // 8.
  return label !== p.classification ? ['/classification: does not follow from the intervals and tolerances'] : [];
}

function effectProblems(p: Predicate, n: number): string[] {
  const effect = p.effect;
  const exceeds = Object.values(effect.layer_changes).some(v => (v as number) > n);
  const layers = exceeds ? ['/effect/layer_changes: exceeds the sample count'] : [];
  const problems = [...numeric(effect, p.disclosure.resolution), ...figures(p, n, layers)];
  return problems.length > 0 ? problems : label(p);
}

export function flipConsistent(baseline: string, intervened: string, flip: boolean): boolean {
  if (baseline !== intervened) {
    return flip;
  }
  return baseline === 'other' || !flip;
}

function rows(p: Predicate, seed: number, n: number): string[] {
  const sampleRows: Array<[number, string, string, boolean]> | null = p.sample_rows;
  const effect = p.effect;
  if (sampleRows === null) {
    return ['/sample_rows: missing although an effect is reported'];
  }
  if (sampleRows.length !== n || !sampleRows.every((r, i) => r[0] === seed + i)) {
    return ['/sample_rows: seeds are not seed..seed+count-1 in order'];
  }
  const problems: string[] = [];
  if (!sampleRows.every(([, b, i, f]) => flipConsistent(b, i, f))) {
    problems.push('/sample_rows: a flip contradicts its decision labels');
  }
  if (sampleRows.filter(r => r[3]).length !== effect.flips) {
    problems.push('/sample_rows: flips differ from /effect/flips');
  }
  for (const [column, name] of [
    [1, 'baseline_rate'],
    [2, 'intervened_rate']
  ] as const) {
    if (sampleRows.filter(r => r[column] === 'recorded').length !== count(effect[name], n)) {
      problems.push(`/sample_rows: recorded decisions differ from /effect/${name}`);
    }
  }
  const recorded = p.recorded_seed;
  if (recorded !== null) {
    const inside = seed <= recorded.seed && recorded.seed < seed + n;
    if (recorded.sampled !== inside) {
      problems.push('/recorded_seed/sampled: contradicts the sampled seeds');
    } else if (inside) {
      const [, b, i, f] = sampleRows[recorded.seed - seed];
      if (recorded.baseline !== b || recorded.intervened !== i || recorded.flip !== f) {
        problems.push('/recorded_seed: differs from its sample row');
      }
    }
    if ('flip' in recorded) {
      if (!flipConsistent(recorded.baseline, recorded.intervened, recorded.flip)) {
        problems.push('/recorded_seed: a flip contradicts its decision labels');
      }
      if ((recorded.delta === null) !== (effect.outcome === 'categorical')) {
        problems.push('/recorded_seed/delta: contradicts the outcome kind');
      }
    }
  }
  return problems;
}

/** The boundary of a call id ``scope/name#k`` (Python's partition and rpartition). */
export function boundary(call: string): string {
  const slash = call.indexOf('/');
  const rest = slash < 0 ? '' : call.slice(slash + 1);
  const hash = rest.lastIndexOf('#');
  return hash < 0 ? '' : rest.slice(0, hash);
}

function servedBy(p: Predicate, n: number): string[] {
  const served: Predicate[] = p.served_by ?? [];
  const problems: string[] = [];
  if (new Set(served.map(r => JSON.stringify([r.arm, r.call]))).size !== served.length) {
    problems.push("/served_by: an (arm, call) row appears twice");
  }
  const inferred = (r: Predicate): number => (Object.hasOwn(r, INFERENCE_COLUMN) ? (r[INFERENCE_COLUMN] as number) : 0);
  if (served.some(r => SERVED_COLUMNS.reduce((total, c) => total + (r[c] as number), 0) + inferred(r) !== n)) {
    problems.push("/served_by: a row's counts do not sum to the sample count");
  }
  if (new Set(served.map(r => Object.hasOwn(r, INFERENCE_COLUMN))).size > 1) {
    problems.push('/served_by: the inference column is on some rows only');
  }
  if (served.some(r => inferred(r)) && (p.inference ?? null) === null) {
    problems.push('/served_by: calls answered by inference no grant authorised');
  }
  if (served.some(r => r.arm === 'baseline' && r.intervention)) {
    problems.push('/served_by: the baseline arm has no intervened call');
  }
  const calls = served.filter(r => r.call === 'new calls');
  if (calls.some(r => r.record || r.intervention || r.unused)) {
    problems.push('/served_by: a call the record does not know was served from it');
  }
  if (served.some(r => (r.call as string).startsWith('ambient:'))) {
    problems.push('/served_by: an ambient input the record does not hold abstains');
  }
  const fidelity: Predicate = p.substitute_fidelity ?? {};
  const unfaithful = new Set(
    Object.entries(fidelity)
      .filter(([, checked]) => !(checked as Predicate).faithful)
      .map(([name]) => name)
  );
  if (served.some(r => r.substitute && unfaithful.has(boundary(r.call)))) {
    problems.push('/served_by: an unfaithful substitute served a call');
  }
  return problems;
}

/** The cut and the request name the same one, and its call is a call of it. */
export function cutNamed(p: Predicate): string[] {
  const named = p.request.from_cut;
  const taken: Predicate | undefined = p.cut;
  if ((taken === undefined || taken === null) && named === undefined) {
    return [];
  }
  if (taken === undefined || taken === null || named !== taken.name) {
    return ['/cut: present exactly when the request names from_cut, with its name'];
  }
  if (boundary(taken.call_id) !== taken.name) {
    return ['/cut/call_id: is not a call of the named cut'];
  }
  return [];
}

/** 7. A cut is named exactly when the request replays from it, by a call of that cut,
 * served from the record only. */
function cut(p: Predicate): string[] {
  const problems = cutNamed(p);
  const taken: Predicate | undefined = p.cut;
  if (problems.length > 0 || taken === undefined || taken === null) {
    return problems;
  }
  const served: Predicate[] = p.served_by ?? [];
  const rows = served.filter(r => r.call === taken.call_id);
  if (rows.some(r => ['substitute', 'intervention', 'unservable'].some(c => r[c]))) {
    return ['/served_by: the cut was not served from the record'];
  }
  return [];
}

/** Boundaries whose substitute answered requests the record does not hold though the
 * request does not declare it authoritative. */
export function unauthorised(p: Predicate): string[] {
  const allowed = new Set<string>(p.request.authoritative_substitutes ?? []);
  const names: string[] = p.substitute_answers?.boundaries ?? [];
  return names.filter(b => !allowed.has(b));
}

/** At most how many samples the substitute (or unservable) marks of the named
 * boundaries' calls and of new calls can account for. */
function substituted(p: Predicate, names: Set<string>, n: number): number {
  const served: Predicate[] = p.served_by;
  const marks = served
    .filter(r => r.call === 'new calls' || names.has(boundary(r.call)))
    .reduce((total, r) => total + (r.substitute as number) + (r.unservable as number), 0);
  return Math.min(n, marks);
}

/** 8. Substitute answers, when reported (certificates issued before have none). */
export function substituteAnswers(
  p: Predicate,
  n: number | null,
  capacity: (p: Predicate, names: Set<string>, n: number) => number = substituted
): string[] {
  const answers: Predicate | undefined = p.substitute_answers;
  if (answers === undefined || answers === null) {
    return [];
  }
  if (p.served_by === null || n === null) {
    return ['/substitute_answers: reported without a served-by table'];
  }
  const problems: string[] = [];
  const names = new Set<string>(answers.boundaries);
  const k: number = answers.samples;
  if ((k === 0) !== (names.size === 0)) {
    problems.push('/substitute_answers: a sample count exactly when boundaries are named');
  }
  if (k > capacity(p, names, n)) {
    problems.push('/substitute_answers: exceeds the samples served by substitute');
  }
  const label = p.classification;
  if (EFFECT_LABELS.includes(label) && label !== 'inconclusive' && unauthorised(p).length > 0) {
    problems.push(
      "/classification: rests on a substitute's answers to requests the record does " +
        'not hold, which the request does not declare authoritative'
    );
  }
  return problems;
}

/** Every broken rule of a v2 predicate that matches its schema. */
export function ruleProblemsV2(p: Predicate): string[] {
  const problems = ruleProblems(p, false); // 1.
  problems.push(...classification(p)); // 2.
  const samples = p.samples;
  if (p.effect !== null && samples !== null) {
    problems.push(...effectProblems(p, samples.count)); // 3.
    problems.push(...rows(p, samples.seed, samples.count)); // 4., 5.
  }
  if (p.served_by !== null) {
    if (samples === null) {
      problems.push('/served_by: reported without samples');
    } else {
      problems.push(...servedBy(p, samples.count)); // 6.
    }
  }
  problems.push(...cut(p)); // 7.
  problems.push(...substituteAnswers(p, samples === null ? null : samples.count)); // 8.
  return problems;
}
