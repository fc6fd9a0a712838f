/**
 * Rules of a v3 predicate beyond its schema (``ledger/certificates/_rules_v3.py``): v2's,
 * in its order, where v3 reports less:
 *
 * 3. the TOST interval and the minimum detectable delta are the ones the mean and the
 *    two-sided interval imply (``derived``); no histogram; coarse layer changes;
 * 4. no per-sample rows: the recorded seed is sampled exactly when within the seeds and
 *    its flip agrees with its labels;
 * 6. served-by: per arm one row for the recorded calls and one for the new calls, each a
 *    single ``all`` mark or several ``some``; ``substituted`` agrees with the recorded
 *    rows' substitute marks and names no unfaithful substitute;
 * 7. a cut's boundary is not among ``substituted``;
 * 8. substitute answers only where some row has a substitute or unservable mark.
 */

import { derivedDeltaMde, derivedEquivalence } from './derived';
import {
  classification,
  close,
  cutNamed,
  figures,
  flipConsistent,
  INFERENCE_COLUMN,
  label,
  SERVED_COLUMNS,
  substituteAnswers
} from './rulesV2';
import { onGrid, Predicate, ruleProblems } from './rulesV1';

const NONE = 'none';
const ALL = 'all';

function used(cell: unknown): boolean {
  return cell !== NONE;
}

function whole(row: Predicate): boolean {
  const cells = [...SERVED_COLUMNS.map(c => row[c]), Object.hasOwn(row, INFERENCE_COLUMN) ? row[INFERENCE_COLUMN] : NONE];
  const marks = cells.filter(cell => cell !== NONE);
  return (marks.length === 1 && marks[0] === ALL) || (marks.length >= 2 && !marks.includes(ALL));
}

function numeric(effect: Predicate, resolution: number, n: number): string[] {
  const isNumeric = effect.outcome === 'numeric';
  const eq = effect.equivalence;
  const fields = [effect.mean_delta, effect.delta_interval, eq.delta_interval, effect.mde.delta];
  if (fields.some(value => (value === null) === isNumeric)) {
    return ['/effect/outcome: numeric fields must be present exactly for a numeric outcome'];
  }
  if (!isNumeric) {
    return [];
  }
  const mean: number = effect.mean_delta;
  const interval: number[] = effect.delta_interval;
  if (![mean, ...interval].every(v => onGrid(v, resolution))) {
    return ['/effect: a delta is not on the declared resolution'];
  }
  if (!(interval[0] <= mean && mean <= interval[1])) {
    return ['/effect/delta_interval: does not hold the mean delta'];
  }
  if (n < 2) {
    return ['/effect: a numeric outcome needs at least two samples'];
  }
  const problems: string[] = [];
  const implied = derivedEquivalence(mean, interval, n, resolution, effect.confidence, eq.alpha);
  if (!eq.delta_interval.every((v: number, i: number) => close(v, implied[i]))) {
    problems.push('/effect/equivalence/delta_interval: is not the one the interval implies');
  }
  const mde = derivedDeltaMde(mean, interval, n, resolution, effect.score_tolerance, effect.confidence, effect.mde.power);
  if (!close(effect.mde.delta, mde)) {
    problems.push('/effect/mde/delta: is not the one the interval implies');
  }
  return problems;
}

function effectProblems(p: Predicate, n: number): string[] {
  const problems = [...numeric(p.effect, p.disclosure.resolution, n), ...figures(p, n, [])];
  return problems.length > 0 ? problems : label(p);
}

function recordedSeed(p: Predicate, seed: number, n: number): string[] {
  const recorded = p.recorded_seed;
  if (recorded === null) {
    return [];
  }
  const problems: string[] = [];
  if (recorded.sampled !== (seed <= recorded.seed && recorded.seed < seed + n)) {
    problems.push('/recorded_seed/sampled: contradicts the sampled seeds');
  }
  if ('flip' in recorded && !flipConsistent(recorded.baseline, recorded.intervened, recorded.flip)) {
    problems.push('/recorded_seed: a flip contradicts its decision labels');
  }
  return problems;
}

function servedBy(p: Predicate): string[] {
  const rows: Predicate[] | null = p.served_by;
  const substituted: string[] | null = p.substituted;
  if ((rows === null) !== (substituted === null)) {
    return ['/substituted: present exactly with the served-by table'];
  }
  if (rows === null || substituted === null) {
    return [];
  }
  const problems: string[] = [];
  if (new Set(rows.map(r => JSON.stringify([r.arm, r.calls]))).size !== rows.length) {
    problems.push('/served_by: an (arm, calls) row appears twice');
  }
  if (!rows.every(whole)) {
    problems.push("/served_by: a row's marks do not cover the samples");
  }
  if (new Set(rows.map(r => Object.hasOwn(r, INFERENCE_COLUMN))).size > 1) {
    problems.push('/served_by: the inference column is on some rows only');
  }
  const inferred = rows.some(r => Object.hasOwn(r, INFERENCE_COLUMN) && used(r[INFERENCE_COLUMN]));
  if (inferred && (p.inference ?? null) === null) {
    problems.push('/served_by: calls answered by inference no grant authorised');
  }
  if (rows.some(r => r.arm === 'baseline' && used(r.intervention))) {
    problems.push('/served_by: the baseline arm has no intervened call');
  }
  const fresh = rows.filter(r => r.calls === 'new');
  if (fresh.some(r => ['record', 'intervention', 'unused'].some(c => used(r[c])))) {
    problems.push('/served_by: a call the record does not know was served from it');
  }
  const recorded = rows.filter(r => r.calls === 'recorded');
  if ((substituted.length > 0) !== recorded.some(r => used(r.substitute))) {
    problems.push("/substituted: contradicts the recorded calls' substitute marks");
  }
  const fidelity: Predicate = p.substitute_fidelity ?? {};
  if (substituted.some(name => Object.hasOwn(fidelity, name) && !fidelity[name].faithful)) {
    problems.push('/served_by: an unfaithful substitute served a call');
  }
  return problems;
}

function cut(p: Predicate): string[] {
  const problems = cutNamed(p);
  const taken: Predicate | undefined = p.cut;
  const substituted: string[] = p.substituted ?? [];
  if (problems.length === 0 && taken !== undefined && taken !== null && substituted.includes(taken.name)) {
    problems.push('/served_by: the cut was not served from the record');
  }
  return problems;
}

function substitutedCapacity(p: Predicate, _names: Set<string>, n: number): number {
  const rows: Predicate[] = p.served_by;
  return rows.some(r => used(r.substitute) || used(r.unservable)) ? n : 0;
}

/** Every broken rule of a v3 predicate that matches its schema. */
export function ruleProblemsV3(p: Predicate): string[] {
  const problems = ruleProblems(p, false); // 1.
  problems.push(...classification(p)); // 2.
  const samples = p.samples;
  if (p.effect !== null && samples !== null) {
    problems.push(...effectProblems(p, samples.count)); // 3.
    problems.push(...recordedSeed(p, samples.seed, samples.count)); // 4., 5.
  }
  if (p.served_by !== null && samples === null) {
    problems.push('/served_by: reported without samples');
  }
  problems.push(...servedBy(p)); // 6.
  problems.push(...cut(p)); // 7.
  problems.push(...substituteAnswers(p, samples === null ? null : samples.count, substitutedCapacity)); // 8.
  return problems;
}
