/**
 * The effect label as a function of what a certificate reports (``ledger/certificates/
 * statistics/_label.py``), so issuing, the Python verifier and this one apply one rule:
 *
 * 1. ``influential`` — the paired-delta interval lies wholly beyond the score tolerance,
 *    or the decision flipped on at least ``MIN_FLIPS`` seeds.
 * 2. ``equivalent`` — the TOST interval lies inside the tolerance (or there is no
 *    score), no decision flipped, and the flip rate's upper bound is below the flip
 *    tolerance.
 * 3. ``inconclusive`` — neither. Interval ends at ±1 are clamped: never "inside".
 */

export const MIN_FLIPS = 2;

export interface LabelInputs {
  deltaInterval: [number, number] | null;
  equivalenceInterval: [number, number] | null;
  scoreTolerance: number;
  flips: number;
  flipUpper: number;
  flipTolerance: number;
}

export function effectLabel(x: LabelInputs): string {
  if (x.deltaInterval !== null) {
    const [lo, hi] = x.deltaInterval;
    if (lo > x.scoreTolerance || hi < -x.scoreTolerance) {
      return 'influential';
    }
  }
  if (x.flips >= MIN_FLIPS) {
    return 'influential';
  }
  let inside = true;
  if (x.equivalenceInterval !== null) {
    const [lo, hi] = x.equivalenceInterval;
    inside = -x.scoreTolerance <= lo && hi <= x.scoreTolerance && -1 < lo && hi < 1;
  }
  if (inside && x.flips === 0 && x.flipUpper < x.flipTolerance) {
    return 'equivalent';
  }
  return 'inconclusive';
}
