/**
 * ``flip_mde`` from ``ledger/certificates/statistics/_power.py``: the smallest true flip
 * rate at which N samples show at least ``minFlips`` flips with probability ``power``, by
 * bisection on ``P(Binomial(n, p) >= minFlips)``; ``null`` when N is too small ever to
 * show them.
 */

import { fsum, Unevaluable } from './numbers';

const BISECTIONS = 200;

function comb(n: number, k: number): number {
  let out = 1;
  for (let i = 0; i < k; i++) {
    out = (out * (n - i)) / (i + 1);
  }
  return out;
}

/** ``P(Binomial(n, p) >= k)``. */
function atLeast(k: number, n: number, p: number): number {
  if (p <= 0) {
    return k > 0 ? 0 : 1;
  }
  if (p >= 1) {
    return k <= n ? 1 : 0;
  }
  const terms: number[] = [];
  for (let i = 0; i < Math.min(k, n + 1); i++) {
    terms.push(comb(n, i) * p ** i * (1 - p) ** (n - i));
  }
  return Math.max(0, 1 - fsum(terms));
}

export function flipMde(n: number, minFlips: number, power: number): number | null {
  if (!Number.isInteger(n) || n < 1) {
    throw new Unevaluable('n must be a positive integer');
  }
  if (!(power > 0 && power < 1)) {
    throw new Unevaluable('power must lie strictly between 0 and 1');
  }
  if (n < minFlips) {
    return null;
  }
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < BISECTIONS; i++) {
    const mid = 0.5 * (lo + hi);
    if (mid === lo || mid === hi) {
      break;
    }
    if (atLeast(minFlips, n, mid) < power) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}
