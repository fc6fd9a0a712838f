/**
 * Reading a certificate envelope for display. Display never implies validity: the view
 * says "not verified" until the Verify button has run both verifiers.
 */

import { decodeCanonicalBase64 } from '../verify/base64';

export type Json = Record<string, unknown>;

export interface CertificateView {
  predicateType: string;
  version: 'v1' | 'v2' | 'v3' | 'unknown';
  subject: string;
  predicate: Json;
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asObject(value: unknown): Json {
  return isObject(value) ? value : {};
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

export class UnreadableCertificate extends Error {}

/** The statement inside ``envelope``, for display; throws UnreadableCertificate. */
export function readCertificate(envelope: unknown): CertificateView {
  const payload = isObject(envelope) ? decodeCanonicalBase64(envelope.payload) : null;
  if (payload === null) {
    throw new UnreadableCertificate('this file is not a DSSE envelope');
  }
  let statement: unknown;
  try {
    statement = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch {
    throw new UnreadableCertificate('the envelope payload is not JSON');
  }
  if (!isObject(statement) || !isObject(statement.predicate)) {
    throw new UnreadableCertificate('the payload is not a certificate statement');
  }
  const predicateType = String(statement.predicateType ?? '');
  const known = ['v1', 'v2', 'v3'] as const;
  const version = known.find(v => predicateType.endsWith(`/certificate/${v}`)) ?? 'unknown';
  const subject = String(asObject(asArray(statement.subject)[0]).name ?? '');
  return { predicateType, version, subject, predicate: statement.predicate };
}
