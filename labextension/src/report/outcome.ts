/**
 * A release report row's outcome from its member certificate, as every verifier derives
 * it (``ledger.certificates.report_outcome`` and ``report_layers_changed``).
 */

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Load-bearing layers (not ignored by the request) that changed in any sample: a count
 * of samples (v2) or none / some / all of them (v3). */
export function layersChanged(predicate: Json | null): string[] {
  if (predicate === null) {
    return [];
  }
  const effect = isObject(predicate.effect) ? predicate.effect : {};
  const changes = isObject(effect.layer_changes) ? effect.layer_changes : {};
  const request = isObject(predicate.request) ? predicate.request : {};
  const tolerances = isObject(request.tolerances) ? request.tolerances : {};
  const ignored = new Set(Array.isArray(tolerances.ignored) ? tolerances.ignored : []);
  return Object.keys(changes)
    .filter(k => changes[k] !== 0 && changes[k] !== 'none' && !ignored.has(k))
    .sort();
}

/** ``[label, reason]`` of one audit from its certificate predicate, or of a member with
 * no certificate: ``refused`` at submission, else ``failed``. */
export function reportOutcome(predicate: Json | null, refused = false): [string, string | null] {
  if (predicate === null) {
    return ['not-auditable', refused ? 'refused' : 'failed'];
  }
  const classification = predicate.classification;
  const effect = isObject(predicate.effect) ? predicate.effect : {};
  if (classification === 'influential') {
    return [truthy(effect.flips) ? 'decision-changed' : 'layer-changed', null];
  }
  if (classification === 'equivalent') {
    return [layersChanged(predicate).length > 0 ? 'layer-changed' : 'equivalent', null];
  }
  if (classification === 'inconclusive') {
    return ['inconclusive', null];
  }
  if (classification === 'baseline-not-reproduced' || classification === 'observable-only') {
    return ['not-auditable', classification];
  }
  return ['not-auditable', 'failed'];
}

/** Python's truth of a JSON value. */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) {
    return value.length > 0;
  }
  if (isObject(value)) {
    return Object.keys(value).length > 0;
  }
  return Boolean(value);
}
