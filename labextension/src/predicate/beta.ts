/**
 * The regularised incomplete beta function and the exact binomial interval, ported from
 * ``ledger/certificates/statistics/_intervals.py`` step for step (continued fraction of
 * Numerical Recipes §6.4 with modified Lentz, inverted by bisection), with CPython's
 * ``math.lgamma`` (Lanczos, g = 6.0246...) so both sides compute the same figures.
 */

import { Unevaluable } from './numbers';

const EPS = 1e-16;
const TINY = 1e-300;
const MAX_TERMS = 100_000;
const MAX_BISECTIONS = 2_000;

const LANCZOS_G = 6.024680040776729583740234375;
const LANCZOS_NUM = [
  23531376880.410759688572007674451636754734846804940, 42919803642.649098768957899047001988850926355848959,
  35711959237.355668049440185451547166705960488635843, 17921034426.037209699919755754458931112671403265390,
  6039542586.3520280050642916443072979210699388420708, 1439720407.3117216736632230727949123939715485786772,
  248874557.86205415651146038641322942321632125127801, 31426415.585400194380614231628318205362874684987640,
  2876370.6289353724412254090516208496135991145378768, 186056.26539522349504029498971604569928220784236328,
  8071.6720023658162106380029022722506138218516325024, 210.82427775157934587250973392071336271166969580291,
  2.5066282746310002701649081771338373386264310793408
];
const LANCZOS_DEN = [
  0.0, 39916800.0, 120543840.0, 150917976.0, 105258076.0, 45995730.0, 13339535.0, 2637558.0, 357423.0,
  32670.0, 1925.0, 66.0, 1.0
];

function lanczosSum(x: number): number {
  let num = 0;
  let den = 0;
  if (x < 5) {
    for (let i = LANCZOS_NUM.length - 1; i >= 0; i--) {
      num = num * x + LANCZOS_NUM[i];
      den = den * x + LANCZOS_DEN[i];
    }
  } else {
    for (let i = 0; i < LANCZOS_NUM.length; i++) {
      num = num / x + LANCZOS_NUM[i];
      den = den / x + LANCZOS_DEN[i];
    }
  }
  return num / den;
}

/** ``math.lgamma`` for positive finite ``x`` (the only arguments used here). */
export function lgamma(x: number): number {
  if (x === Math.floor(x) && x <= 2) {
    return 0; // lgamma(1) = lgamma(2) = 0; x > 0 here
  }
  if (x < 1e-20) {
    return -Math.log(x);
  }
  let r = Math.log(lanczosSum(x)) - LANCZOS_G;
  r += (x - 0.5) * (Math.log(x + LANCZOS_G - 0.5) - 1);
  return r;
}

function continuedFraction(a: number, b: number, x: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) {
    d = TINY;
  }
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= MAX_TERMS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    d = Math.abs(d) < TINY ? TINY : d;
    c = 1 + aa / c;
    c = Math.abs(c) < TINY ? TINY : c;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    d = Math.abs(d) < TINY ? TINY : d;
    c = 1 + aa / c;
    c = Math.abs(c) < TINY ? TINY : c;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) <= EPS) {
      return h;
    }
  }
  throw new Unevaluable('incomplete beta continued fraction did not converge');
}

/** ``I_x(a, b)`` for ``a, b > 0`` and ``0 <= x <= 1``. */
export function regularizedBeta(a: number, b: number, x: number): number {
  if (!(a > 0 && b > 0 && Number.isFinite(a) && Number.isFinite(b))) {
    throw new Unevaluable('beta parameters must be positive and finite');
  }
  if (!(x >= 0 && x <= 1)) {
    throw new Unevaluable('x must lie in [0, 1]');
  }
  if (x === 0 || x === 1) {
    return x;
  }
  const logFront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * Math.log(x) + b * Math.log1p(-x);
  const front = Math.exp(logFront);
  if (x < (a + 1) / (a + b + 2)) {
    return Math.min(1, (front * continuedFraction(a, b, x)) / a);
  }
  return Math.max(0, 1 - (front * continuedFraction(b, a, 1 - x)) / b);
}

/** The ``x`` in [0, 1] with ``I_x(a, b) = q`` (bisection to float resolution). */
export function betaQuantile(q: number, a: number, b: number): number {
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < MAX_BISECTIONS; i++) {
    const mid = 0.5 * (lo + hi);
    if (mid === lo || mid === hi || hi - lo <= 1e-15 * hi) {
      break;
    }
    if (regularizedBeta(a, b, mid) < q) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

/** Exact two-sided binomial interval ``[lo, hi]`` with ``0 <= lo <= k/n <= hi <= 1``. */
export function clopperPearson(successes: number, trials: number, confidence = 0.95): [number, number] {
  if (!Number.isInteger(successes) || !Number.isInteger(trials)) {
    throw new Unevaluable('successes and trials must be integers');
  }
  if (trials < 1) {
    throw new Unevaluable('an interval needs at least one trial');
  }
  if (!(successes >= 0 && successes <= trials)) {
    throw new Unevaluable('successes must lie between 0 and trials');
  }
  if (!(confidence > 0 && confidence < 1)) {
    throw new Unevaluable('confidence must lie strictly between 0 and 1');
  }
  const alpha = 1 - confidence;
  const k = successes;
  const n = trials;
  const lo = k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1);
  const hi = k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k);
  const pHat = k / n;
  return [Math.min(lo, pHat), Math.max(hi, pHat)];
}
