/**
 * RFC 8785 (JSON Canonicalization Scheme) for values produced by ``JSON.parse``.
 *
 * JCS defines numbers and strings by ECMAScript's own serialisation, so JSON.stringify
 * is exact for those; objects are written with members sorted by UTF-16 code units,
 * which is JavaScript's default string order.
 */

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    return JSON.stringify(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new TypeError('not representable in JSON');
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return '[' + value.map(canonicalJson).join(',') + ']';
  }
  if (typeof value === 'object') {
    const members = Object.keys(value as object)
      .sort()
      .map(
        key =>
          JSON.stringify(key) + ':' + canonicalJson((value as Record<string, unknown>)[key])
      );
    return '{' + members.join(',') + '}';
  }
  throw new TypeError('not a JSON value');
}
