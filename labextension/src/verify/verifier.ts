/**
 * Verifying a certificate or release report envelope in the browser, with the same named
 * checks as the Python offline verifier (jupyter_ext/_offline.py), so a reviewer can
 * compare the two side by side and a tampered file fails at the same step on both.
 *
 * Steps (each yields one check; a step runs only if the earlier ones passed):
 *
 * 1. ``envelope``  — a DSSE envelope (exactly payload, payloadType, signatures; canonical
 *                    base64) with type ``application/vnd.in-toto+json``.
 * 2. ``signature`` — an Ed25519 signature over ``PAE(type, payload)`` verifies with the
 *                    trusted issuer key.
 * 3. ``statement`` — the payload is canonical JSON (RFC 8785): an in-toto Statement v1
 *                    with a known certificate predicate type and one ``specimen:<id>``
 *                    subject, or the release report type and one ``release-selection``
 *                    subject with a sha256 digest; and ``predicate.issuer`` is the key
 *                    that verified.
 * 4. ``predicate`` — a certificate's predicate matches its version's JSON Schema and
 *                    rules (``../predicate``, the port of
 *                    ``ledger.certificates.predicate_problems``); a report's has the report's
 *                    shape and its digest, totals and gate follow from its rows
 *                    (``../report/shape``). A failure names the first problem as
 *                    ``/predicate<location>: <rule>``.
 *
 * Failure details are fixed sentences: nothing of the file is echoed back before its
 * signature has verified.
 */

import { Bytes, decodeCanonicalBase64 } from './base64';
import { canonicalJson } from './canonical';
import { finding, PREDICATE_TYPE, PREDICATE_TYPE_V1, PREDICATE_TYPE_V2, predicateProblems, Unevaluable } from '../predicate';
import { isReportStatement, REPORT_TYPE, REPORT_TYPE_V1, SUBJECT } from '../report/model';
import { reportProblems } from '../report/shape';
import { TrustedKey } from './key';

export const IN_TOTO = 'application/vnd.in-toto+json';
export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const PREDICATE_TYPES: Readonly<Record<string, string>> = {
  [PREDICATE_TYPE]: 'certificate v3',
  [PREDICATE_TYPE_V2]: 'certificate v2',
  [PREDICATE_TYPE_V1]: 'certificate v1',
  [REPORT_TYPE]: 'release report v2',
  [REPORT_TYPE_V1]: 'release report v1'
};
export const STEPS = ['envelope', 'signature', 'statement', 'predicate'] as const;

export interface VerifyCheck {
  step: number;
  name: string;
  ok: boolean;
  detail: string;
}

export interface VerifyReport {
  ok: boolean;
  checks: VerifyCheck[];
  /** Re-derived from the verified figures (``predicate/finding``) once every check passed. */
  finding?: string | null;
}

export class Failed extends Error {}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function b64(text: unknown): Bytes {
  const data = decodeCanonicalBase64(text);
  if (data === null) {
    throw new Failed('not a DSSE envelope (base64)');
  }
  return data;
}

/** DSSE's pre-authentication encoding: ``DSSEv1 <len> <type> <len> <payload>``. */
export function pae(payloadType: string, payload: Uint8Array): Bytes {
  const encoder = new TextEncoder();
  const type = encoder.encode(payloadType);
  const head = encoder.encode(`DSSEv1 ${type.length} `);
  const middle = encoder.encode(` ${payload.length} `);
  const out = new Uint8Array(head.length + type.length + middle.length + payload.length);
  out.set(head, 0);
  out.set(type, head.length);
  out.set(middle, head.length + type.length);
  out.set(payload, head.length + type.length + middle.length);
  return out;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

export class State {
  payload: Bytes = new Uint8Array(0);
  payloadType = '';
  sigs: Array<[Bytes, unknown]> = [];
  statement: JsonObject = {};

  constructor(
    public raw: unknown,
    readonly trusted: TrustedKey
  ) {}
}

async function envelope(s: State): Promise<string> {
  const raw = s.raw;
  const keys = isObject(raw) ? Object.keys(raw).sort() : [];
  if (!isObject(raw) || keys.join(',') !== 'payload,payloadType,signatures') {
    throw new Failed('not a DSSE envelope (keys)');
  }
  const sigs = raw.signatures;
  if (!Array.isArray(sigs) || sigs.length < 1 || sigs.length > 16) {
    throw new Failed('not a DSSE envelope (signatures)');
  }
  for (const item of sigs) {
    if (
      !isObject(item) ||
      !('sig' in item) ||
      !Object.keys(item).every(k => k === 'sig' || k === 'keyid')
    ) {
      throw new Failed('not a DSSE envelope (signature entry)');
    }
    s.sigs.push([b64(item.sig), item.keyid ?? null]);
  }
  s.payload = b64(raw.payload);
  s.payloadType = typeof raw.payloadType === 'string' ? raw.payloadType : '';
  if (s.payloadType !== IN_TOTO) {
    throw new Failed(`payloadType is not ${IN_TOTO}`);
  }
  return `DSSE envelope with ${s.sigs.length} signature(s)`;
}

async function signature(s: State): Promise<string> {
  const { key, keyid } = s.trusted;
  const message = pae(s.payloadType, s.payload);
  for (const [sig, hint] of s.sigs) {
    if (hint !== null && hint !== keyid) {
      continue;
    }
    let valid = false;
    try {
      valid = await crypto.subtle.verify({ name: 'Ed25519' }, key, sig, message);
    } catch {
      valid = false; // a malformed signature is one that does not verify
    }
    if (valid) {
      return `signed by ${keyid}`;
    }
  }
  throw new Failed('no signature verifies with the issuer key');
}

async function statement(s: State): Promise<string> {
  let parsed: unknown;
  let canonical: Uint8Array;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(s.payload));
    canonical = new TextEncoder().encode(canonicalJson(parsed));
  } catch {
    throw new Failed('payload is not strict JSON');
  }
  if (!equalBytes(canonical, s.payload)) {
    throw new Failed('payload is not canonical JSON (RFC 8785)');
  }
  if (!isObject(parsed) || parsed._type !== STATEMENT_TYPE) {
    throw new Failed('/_type: not an in-toto Statement v1');
  }
  const predicateType = String(parsed.predicateType);
  const version = Object.prototype.hasOwnProperty.call(PREDICATE_TYPES, predicateType)
    ? PREDICATE_TYPES[predicateType]
    : undefined;
  if (version === undefined) {
    throw new Failed('/predicateType: not a certificate this version knows');
  }
  const subjects = parsed.subject;
  const one = Array.isArray(subjects) && subjects.length === 1 && isObject(subjects[0]);
  const subject: JsonObject = one ? (subjects[0] as JsonObject) : {};
  if (isReportStatement(predicateType)) {
    const digest = subject.digest;
    if (!(subject.name === SUBJECT && isObject(digest) && typeof digest.sha256 === 'string')) {
      throw new Failed(`/subject: must be one ${SUBJECT} with a sha256 digest`);
    }
  } else if (!String(subject.name ?? '').startsWith('specimen:')) {
    throw new Failed('/subject: must be one specimen:<id>');
  }
  const predicate = parsed.predicate;
  if (!isObject(predicate) || predicate.issuer !== s.trusted.keyid) {
    throw new Failed('/predicate/issuer: is not the key that signed');
  }
  s.statement = parsed;
  return `in-toto Statement v1 (${version}) about ${String(subject.name)}`;
}

function failOn(problems: string[]): void {
  if (problems.length > 0) {
    const [location, rule] = splitOnce(problems[0], ': ');
    throw new Failed(`/predicate${location.replace(/\/+$/, '')}: ${rule}`);
  }
}

async function predicate(s: State): Promise<string> {
  const predicateType = String(s.statement.predicateType);
  if (isReportStatement(predicateType)) {
    const subject = (s.statement.subject as JsonObject[])[0];
    failOn(await reportProblems(s.statement.predicate, (subject.digest as JsonObject).sha256, predicateType));
    const recomputed = predicateType === REPORT_TYPE ? 'totals, gate and bound' : 'totals and gate';
    return `has the ${PREDICATE_TYPES[predicateType]} shape; selection digest, ${recomputed} recomputed`;
  }
  let problems: string[];
  try {
    problems = predicateProblems(s.statement.predicate, predicateType);
  } catch (error) {
    if (!(error instanceof Unevaluable)) {
      throw error;
    }
    // the rules cannot evaluate the figures (flips beyond the sample count)
    problems = ['/: the figures cannot be evaluated'];
  }
  failOn(problems);
  return `matches the ${PREDICATE_TYPES[predicateType]} schema and rules`;
}

function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + separator.length)];
}

export type Step<S extends State = State> = [string, (s: S) => Promise<string>];

export const STEP_FUNCTIONS: ReadonlyArray<Step> = [
  ['envelope', envelope],
  ['signature', signature],
  ['statement', statement],
  ['predicate', predicate]
];

/** Verify ``envelope`` (a parsed file, or anything else) against the trusted key. */
export async function verifyEnvelope(envelope: unknown, trusted: TrustedKey): Promise<VerifyReport> {
  return runSteps(new State(envelope, trusted), STEP_FUNCTIONS);
}

/** Each step in turn, each one run only if every earlier one passed. */
export async function runSteps<S extends State>(state: S, steps: ReadonlyArray<Step<S>>): Promise<VerifyReport> {
  const checks: VerifyCheck[] = [];
  let failed = false;
  for (const [index, [name, step]] of steps.entries()) {
    if (failed) {
      checks.push({ step: index + 1, name, ok: false, detail: 'not run' });
      continue;
    }
    try {
      checks.push({ step: index + 1, name, ok: true, detail: await step(state) });
    } catch (error) {
      if (!(error instanceof Failed)) {
        throw error;
      }
      failed = true;
      checks.push({ step: index + 1, name, ok: false, detail: error.message });
    }
  }
  const type = String(state.statement.predicateType);
  const certificate = [PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPE_V1].includes(type); // not a report
  const stated = failed || !certificate ? null : finding(state.statement.predicate, type);
  return { ok: !failed, checks, finding: stated };
}

/** Parse the file's text the way the Python side does: unparseable text is no envelope. */
export function parseEnvelopeText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
