/**
 * The figures a v3 certificate derives from its reported interval
 * (``ledger/certificates/statistics/_derived.py``): the TOST interval and the minimum
 * detectable delta, from the mean and the two-sided Student-t interval on the grid, the
 * same way the issuer computed them. ``studentTQuantile`` is ``_intervals.py``'s
 * bisection on ``P(|T| > t) = I_{ν/(ν+t²)}(ν/2, 1/2)``.
 */

import { regularizedBeta } from './beta';
import { pyRound, Unevaluable } from './numbers';

const MAX_BISECTIONS = 2000;
const SLACK = 1e-9;

function twoSidedTail(t: number, df: number): number {
  return regularizedBeta(df / 2, 0.5, df / (df + t * t));
}

export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) {
    throw new Unevaluable('p must lie strictly between 0 and 1');
  }
  if (!(df > 0 && Number.isFinite(df))) {
    throw new Unevaluable('degrees of freedom must be positive and finite');
  }
  if (p === 0.5) {
    return 0;
  }
  if (p < 0.5) {
    return -studentTQuantile(1 - p, df);
  }
  const tail = 2 * (1 - p);
  let lo = 0;
  let hi = 1;
  while (twoSidedTail(hi, df) > tail) {
    lo = hi;
    hi = hi * 2;
    if (hi > 1e300) {
      throw new Unevaluable('t quantile out of range');
    }
  }
  for (let i = 0; i < MAX_BISECTIONS; i++) {
    const mid = 0.5 * (lo + hi);
    if (mid === lo || mid === hi || hi - lo <= 1e-15 * hi) {
      break;
    }
    if (twoSidedTail(mid, df) > tail) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

/** ``h`` in grid steps: the larger half-width from the reported mean, half a step more
 * with one end clamped at ±1; ``null`` with both ends clamped. */
function half(mean: number, interval: number[], resolution: number): number | null {
  const [lo, hi] = interval;
  if (lo <= -1 && hi >= 1) {
    return null;
  }
  const m = mean / resolution;
  const h = Math.max(0, m - lo / resolution, hi / resolution - m);
  return lo <= -1 || hi >= 1 ? h + 0.5 : h;
}

function snap(steps: number, resolution: number): number {
  const digits = Math.max(0, 4 - Math.floor(Math.log10(resolution)));
  return Number((steps * resolution).toFixed(digits)) + 0;
}

export function derivedEquivalence(
  mean: number,
  interval: number[],
  n: number,
  resolution: number,
  confidence: number,
  alpha: number
): [number, number] {
  if (n < 2) {
    throw new Unevaluable('an interval needs at least two samples');
  }
  const [lo, hi] = interval;
  const k = studentTQuantile(1 - alpha, n - 1) / studentTQuantile(1 - (1 - confidence) / 2, n - 1);
  const h = half(mean, interval, resolution);
  if (h === null) {
    return [lo, hi];
  }
  const centre = pyRound(mean / resolution);
  const reach = k * h;
  const down = reach === 0 ? centre : Math.floor(centre - reach - 0.5 + SLACK);
  const up = reach === 0 ? centre : Math.ceil(centre + reach + 0.5 - SLACK);
  return [Math.max(lo, Math.min(mean, snap(down, resolution))), Math.min(hi, Math.max(mean, snap(up, resolution)))];
}

export function derivedDeltaMde(
  mean: number,
  interval: number[],
  n: number,
  resolution: number,
  tolerance: number,
  confidence: number,
  power: number
): number {
  if (n < 2) {
    throw new Unevaluable('a minimum detectable delta needs at least two samples');
  }
  const h = half(mean, interval, resolution);
  if (h === null) {
    return 1;
  }
  const tc = studentTQuantile(1 - (1 - confidence) / 2, n - 1);
  const z = tc + studentTQuantile(power, n - 1);
  const steps = tolerance / resolution + (z / tc) * h;
  return Math.min(1, Math.max(Math.min(1, tolerance), snap(Math.ceil(steps - SLACK), resolution)));
}
