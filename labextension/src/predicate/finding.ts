/**
 * The finding: what a certificate found, in plain language, from its signed figures only
 * (``ledger/certificates/_finding.py``; the parity corpus holds Python's sentence for
 * every predicate that passes its checks, and ``test/predicate-parity.test.ts`` demands
 * the same sentence here).
 *
 * Counts are exact; the percentage of a count is rounded half up from the integers;
 * interval ends are rounded outward to whole percents; score deltas are written on the
 * certificate's resolution grid with a sign; a tolerance finer than half the grid is
 * "zero". Call ``finding`` only on a predicate ``predicateProblems`` passed.
 */

import { MIN_FLIPS } from './label';
import { pyRound } from './numbers';
import { PREDICATE_TYPE_V1 } from './types';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const EPS = 1e-9;
const MINUS = '\u2212';
const DASH = '\u2013';
const VERBS: Record<string, [string, string]> = {
  NULLIFY: ['removing', 'from'],
  REPLACE: ['replacing', 'in'],
  PERTURB: ['perturbing', 'in']
};

function capital(phrase: string): string {
  return phrase.slice(0, 1).toUpperCase() + phrase.slice(1);
}

function runs(n: number): string {
  return n === 1 ? `${n} paired run` : `${n} paired runs`;
}

function share(k: number, n: number): number {
  return Math.floor((200 * k + n) / (2 * n));
}

function tenthsText(tenths: number): string {
  const whole = Math.floor(tenths / 10);
  return tenths % 10 === 0 ? `${whole}%` : `${whole}.${tenths % 10}%`;
}

function percent(value: number): string {
  return tenthsText(Math.floor(value * 1000 + 0.5));
}

function up(rate: number): string {
  return tenthsText(Math.ceil(rate * 1000 - EPS));
}

function outward(interval: number[]): string {
  return `${Math.floor(interval[0] * 100 + EPS)}${DASH}${Math.ceil(interval[1] * 100 - EPS)}%`;
}

function decimals(resolution: number): number {
  for (let digits = 0; digits < 13; digits++) {
    const scaled = resolution * Number(`1e${digits}`);
    if (Math.abs(scaled - Math.round(scaled)) <= EPS * Math.max(1, scaled)) {
      return digits;
    }
  }
  return 12;
}

function delta(value: number, digits: number): string {
  // a v1 interval end is not bounded: a huge one is written as a power of ten
  const text = Math.abs(value) >= 1e15 ? Math.abs(value).toExponential(3) : Math.abs(value).toFixed(digits);
  if (/^[0.]*$/.test(text)) {
    return text;
  }
  return (value < 0 ? MINUS : '+') + text;
}

function intervalText(interval: number[], digits: number): string {
  return `${delta(interval[0], digits)} to ${delta(interval[1], digits)}`;
}

function toleranceText(tolerance: number, resolution: number, digits: number): string {
  if (tolerance < resolution / 2) {
    return 'a tolerance of zero';
  }
  return `the tolerance of \u00b1${tolerance.toFixed(digits)}`;
}

function subject(p: Json): string {
  const request = p.request;
  const intervention = p.intervention || {};
  const strategy = intervention.strategy || request.strategy;
  if (strategy === 'CODE') {
    return 'running the candidate code in place of the recorded agent';
  }
  const target = intervention.target || {};
  const call = target.call_id || request.call;
  let field: string | undefined = target.field;
  if (strategy === 'REVISION') {
    return `switching call ${call} to another declared revision`;
  }
  const [verb, preposition] = VERBS[strategy];
  if (!field) {
    return `${verb} call ${call}`;
  }
  if (field.startsWith('bundle:')) {
    field = `the bundle ${field.slice('bundle:'.length)}`;
  }
  return `${verb} ${field} ${preposition} call ${call}`;
}

class Figures {
  readonly n: number;
  readonly flips: number;
  readonly level: string;
  readonly flipInterval: number[];
  readonly resolution: number;
  readonly digits: number;
  readonly mean: number | null;
  readonly deltaInterval: number[] | null;
  readonly tolerance: number;
  readonly flipTolerance: number;
  readonly alpha: number;
  readonly equivalenceInterval: number[] | null;
  readonly flipUpper: number;

  constructor(p: Json) {
    const effect = p.effect;
    this.n = p.samples.count;
    this.flips = 'flips' in effect ? effect.flips : pyRound(effect.flip_rate * this.n);
    this.level = percent(effect.confidence ?? 0.95);
    this.flipInterval = effect.flip_interval;
    this.resolution = p.disclosure.resolution;
    this.digits = decimals(this.resolution);
    this.mean = effect.mean_delta;
    this.deltaInterval = effect.delta_interval;
    this.tolerance = effect.score_tolerance;
    this.flipTolerance = effect.flip_tolerance;
    const equivalence = effect.equivalence || {};
    this.alpha = equivalence.alpha;
    this.equivalenceInterval = equivalence.delta_interval;
    this.flipUpper = equivalence.flip_upper;
  }

  decisions(): string {
    const shared = `${share(this.flips, this.n)}%, ${this.level} interval ${outward(this.flipInterval)}`;
    return `in ${this.flips} of ${runs(this.n)} (${shared})`;
  }

  moved(interval: number[] | null = null, level = '', note = ''): string {
    const shown = intervalText(interval ?? (this.deltaInterval as number[]), this.digits);
    return `by ${delta(this.mean as number, this.digits)} (${level || this.level} interval ${shown}${note})`;
  }

  toleranceText(): string {
    return toleranceText(this.tolerance, this.resolution, this.digits);
  }

  beyond(): boolean {
    const [lo, hi] = this.deltaInterval as number[];
    return lo > this.tolerance || hi < -this.tolerance;
  }

  inside(): boolean {
    const [lo, hi] = this.equivalenceInterval as number[];
    return -this.tolerance <= lo && hi <= this.tolerance && -1 < lo && hi < 1;
  }
}

function influential(what: string, f: Figures): string {
  if (f.flips >= MIN_FLIPS) {
    let text = `${capital(what)} changed the decision ${f.decisions()}`;
    if (f.mean !== null) {
      text += `; the score moved ${f.moved()}`;
    }
    return text + '.';
  }
  const changed = f.flips === 0 ? 'none' : String(f.flips);
  return (
    `${capital(what)} moved the score ${f.moved()}, clear of ${f.toleranceText()}; ` +
    `the decision changed in ${changed} of ${runs(f.n)}.`
  );
}

function equivalent(what: string, f: Figures): string {
  let text =
    `${capital(what)} made no difference beyond the declared tolerances: the decision ` +
    `changed in none of ${runs(f.n)} (at most ${up(f.flipUpper)} at ` +
    `${percent(1 - f.alpha)} confidence, below the ${percent(f.flipTolerance)} tolerance)`;
  if (f.mean !== null) {
    const within = `, within ${f.toleranceText()}`;
    text += `; the score moved ${f.moved(f.equivalenceInterval, percent(1 - 2 * f.alpha), within)}`;
  }
  return text + '.';
}

function unauthorised(p: Json): string[] {
  const allowed = new Set<string>(p.request.authoritative_substitutes || []);
  const answers = p.substitute_answers || { boundaries: [] };
  return (answers.boundaries as string[]).filter(name => !allowed.has(name));
}

function inconclusive(p: Json, what: string, f: Figures): string {
  const clauses: string[] = [];
  if (f.flips === 0) {
    let clause = `no decision changed in ${runs(f.n)}`;
    if (f.flipUpper >= f.flipTolerance) {
      clause +=
        `, but a rate up to ${up(f.flipUpper)} cannot be ruled out at ` +
        `${percent(1 - f.alpha)} confidence (the tolerance is ${percent(f.flipTolerance)})`;
    }
    clauses.push(clause);
  } else if (f.flips < MIN_FLIPS) {
    clauses.push(`the decision changed in ${f.flips} of ${runs(f.n)} (a conclusion needs at least ${MIN_FLIPS})`);
  } else {
    clauses.push(`the decision changed ${f.decisions()}`);
  }
  if (f.mean !== null) {
    let clause = `the score moved ${f.moved()}`;
    if (!f.beyond() && !f.inside()) {
      clause += `, which neither clears nor stays within ${f.toleranceText()}`;
    }
    clauses.push(clause);
  }
  let text = `Not enough evidence to tell whether ${what} makes a difference: ${clauses.join('; ')}.`;
  const capped = unauthorised(p);
  if (capped.length > 0) {
    text +=
      ' The label is capped at inconclusive: a substitute answered requests the record ' +
      `does not hold (${capped.join(', ')}), which the request did not declare authoritative.`;
  }
  return text;
}

function diverged(p: Json): string {
  const layers: Json = (p.baseline || {}).layers || {};
  const resolution: number = p.disclosure.resolution;
  const parts: string[] = [];
  for (const name of Object.keys(layers).sort()) {
    const layer = layers[name];
    if (layer.ok) {
      continue;
    }
    const moved = layer.delta;
    if (name === 'score' && moved !== null && moved !== undefined) {
      parts.push(`the score moved by ${delta(moved, decimals(resolution))}`);
    } else {
      parts.push(`${name} differed`);
    }
  }
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

function auditability(p: Json): string {
  return ` ${capital(p.auditability.class)}: ${p.auditability.reason}.`;
}

function v2(p: Json): string {
  const label = p.classification;
  const what = subject(p);
  if (label === 'baseline-not-reproduced') {
    return (
      'Not assessed: the untouched baseline did not reproduce the recorded run' +
      `${diverged(p)}, so the effect of ${what} was not measured.`
    );
  }
  if (label === 'observable-only') {
    const step = p.auditability.first_unverifiable_step;
    const text = `${capital(what)} was replayed, but no counterfactual conclusion is certified: ${p.auditability.reason}`;
    return text + (step !== null && step !== undefined ? ` (first unverifiable step: ${step}).` : '.');
  }
  const figures = new Figures(p);
  let text: string;
  if (label === 'influential') {
    text = influential(what, figures);
  } else if (label === 'equivalent') {
    text = equivalent(what, figures);
  } else {
    text = inconclusive(p, what, figures);
  }
  return text + auditability(p);
}

function v1(p: Json): string {
  let text = `This v1 certificate classifies ${subject(p)} as ${p.classification}`;
  if (p.effect !== null && p.samples !== null) {
    const figures = new Figures(p);
    text += `; the decision changed ${figures.decisions()}; the score moved ${figures.moved()}`;
  }
  return text + '.' + auditability(p);
}

/** The finding of a predicate that ``predicateProblems`` passed under ``predicateType``. */
export function finding(predicate: unknown, predicateType: string): string {
  const p = predicate as Json;
  return predicateType === PREDICATE_TYPE_V1 ? v1(p) : v2(p);
}
