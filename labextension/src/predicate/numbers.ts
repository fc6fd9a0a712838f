/**
 * Python's float semantics where the predicate rules depend on them: ``math.fsum``
 * (exactly rounded, overflow raises), ``math.isclose``, ``round`` (half to even, a
 * non-finite value raises). A raise in Python is an ``Unevaluable`` here: the rules
 * could not judge the figures, and both verifiers say so in the same words.
 */

/** What Python raises as ValueError / ArithmeticError while evaluating the rules. */
export class Unevaluable extends Error {}

/** ``math.fsum``: Shewchuk's exact partials, rounded as CPython rounds them. */
export function fsum(values: Iterable<number>): number {
  const partials: number[] = [];
  for (const value of values) {
    let x = value;
    let i = 0;
    for (let y of partials) {
      if (Math.abs(x) < Math.abs(y)) {
        [x, y] = [y, x];
      }
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) {
        partials[i++] = lo;
      }
      x = hi;
    }
    if (!Number.isFinite(x)) {
      throw new Unevaluable('intermediate overflow in fsum');
    }
    partials.length = i;
    partials.push(x);
  }
  let n = partials.length;
  if (n === 0) {
    return 0;
  }
  let hi = partials[--n];
  let lo = 0;
  while (n > 0) {
    const x = hi;
    const y = partials[--n];
    hi = x + y;
    lo = y - (hi - x);
    if (lo !== 0) {
      break;
    }
  }
  // half-way cases: make the rounding of hi + lo correct (CPython's final step)
  if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
    const y = lo * 2;
    const x = hi + y;
    if (y === x - hi) {
      hi = x;
    }
  }
  return hi;
}

/** ``math.isclose(a, b, rel_tol=rel, abs_tol=abs)``. */
export function isClose(a: number, b: number, rel = 1e-9, abs = 0): boolean {
  if (a === b) {
    return true;
  }
  if (!Number.isFinite(a) || !Number.isFinite(b)) {
    return false;
  }
  const diff = Math.abs(b - a);
  return diff <= Math.abs(rel * b) || diff <= Math.abs(rel * a) || diff <= abs;
}

/** ``round(x)`` of a float: the nearest integer, ties to even. */
export function pyRound(x: number): number {
  if (!Number.isFinite(x)) {
    throw new Unevaluable('cannot round a non-finite value');
  }
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** ``sum`` of numbers, left to right as Python 3.11 adds them. */
export function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) {
    total += value;
  }
  return total;
}
