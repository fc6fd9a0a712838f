/**
 * The shape of a release report's predicate, checked in the browser: the port of
 * ``ledger/certificates/_report_shape.py`` (same problems, same order, same sentences). Keys and
 * types of the predicate and of each row, the label (and, in v2, reason) vocabulary, the
 * selection digest recomputed from the listed ids, totals, gate and (v2) disclosure
 * bound recomputed from the rows. A rule is a fixed sentence and never holds a value
 * from the report.
 */

import { canonicalJson } from '../verify/canonical';
import { LABELS, REASONS, REPORT_TYPE, REPORT_TYPE_V1 } from './model';

type Json = Record<string, unknown>;

const KEYS_V1 = [
  'baseline_code', 'erased', 'gate', 'intervention', 'issued_at', 'issuer',
  'must_hold', 'samples', 'selection_digest', 'selector', 'specimens', 'totals'
];
const KEYS = [...KEYS_V1, 'disclosure'].sort();
const ROW_KEYS_V1 = [
  'audit', 'certificate', 'effects_sandboxed', 'label', 'layers_changed', 'must_hold',
  'outside_control', 'reason', 'specimen'
];
const ROW_KEYS = ['audit', 'certificate', 'label', 'must_hold', 'reason', 'sealed', 'specimen'];
/** Four concluded labels and not-auditable with four reasons: 8 outcomes. */
const BITS_PER_SPECIMEN = 3;
const CERTIFIED_REASONS = ['baseline-not-reproduced', 'observable-only'];
const DIGEST = /^sha256:[0-9a-f]{64}$/;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameKeys(value: Json, keys: string[]): boolean {
  const own = Object.keys(value).sort();
  return own.length === keys.length && own.every((k, i) => k === keys[i]);
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every(v => typeof v === 'string');
}

function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, c => c.codePointAt(0)!);
  const y = Array.from(b, c => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) {
      return x[i] - y[i];
    }
  }
  return x.length - y.length;
}

function sortedUnique(value: string[]): string[] {
  return [...new Set(value)].sort(byCodePoint);
}

function equalStrings(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function isDigest(value: unknown): boolean {
  return typeof value === 'string' && DIGEST.test(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), b => b.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 of the canonical JSON of the sorted ids (``enclave.release``'s own). */
export async function selectionDigest(specimens: string[], erased: string[]): Promise<string> {
  const body = canonicalJson({ specimens: [...specimens].sort(byCodePoint), erased: [...erased].sort(byCodePoint) });
  return `sha256:${await sha256Hex(body)}`;
}

function rowProblemsV1(at: string, row: Json): string[] {
  const problems: string[] = [];
  for (const key of ['specimen', 'audit']) {
    if (typeof row[key] !== 'string' || row[key] === '') {
      problems.push(`${at}/${key}: must be a non-empty string`);
    }
  }
  if (row.certificate !== null && !isDigest(row.certificate)) {
    problems.push(`${at}/certificate: must be null or a sha256 digest`);
  }
  const label = row.label;
  if (!(LABELS as readonly unknown[]).includes(label)) {
    problems.push(`${at}/label: is not a label of release report v1`);
  } else if (label === 'not-auditable') {
    if (typeof row.reason !== 'string' || row.reason === '') {
      problems.push(`${at}/reason: a not-auditable row must give its reason`);
    }
  } else if (row.reason !== null) {
    problems.push(`${at}/reason: only a not-auditable row has a reason`);
  } else if (row.certificate === null) {
    problems.push(`${at}/certificate: an audited row must name its certificate`);
  }
  for (const key of ['layers_changed', 'effects_sandboxed', 'outside_control']) {
    if (!isStrings(row[key])) {
      problems.push(`${at}/${key}: must be a list of strings`);
    }
  }
  return problems;
}

function rowProblemsV2(at: string, row: Json): string[] {
  const problems: string[] = [];
  if (typeof row.specimen !== 'string' || row.specimen === '') {
    problems.push(`${at}/specimen: must be a non-empty string`);
  }
  const { label, reason } = row;
  if (!(LABELS as readonly unknown[]).includes(label)) {
    return [...problems, `${at}/label: is not a label of release report v2`];
  }
  if (label === 'not-auditable') {
    if (!(REASONS as readonly unknown[]).includes(reason)) {
      return [...problems, `${at}/reason: is not a reason of release report v2`];
    }
  } else if (reason !== null) {
    return [...problems, `${at}/reason: only a not-auditable row has a reason`];
  }
  if (reason === 'refused') {
    if (row.audit !== null) {
      problems.push(`${at}/audit: a refused member has no audit`);
    }
  } else if (typeof row.audit !== 'string' || row.audit === '') {
    problems.push(`${at}/audit: must be a non-empty string`);
  }
  const certified = label !== 'not-auditable' || CERTIFIED_REASONS.includes(reason as string);
  if (certified && !isDigest(row.certificate)) {
    problems.push(`${at}/certificate: this outcome names its certificate`);
  } else if (!certified && row.certificate !== null) {
    problems.push(`${at}/certificate: a member with no certificate names none`);
  }
  const sealed = row.sealed;
  if (sealed !== null && !(typeof sealed === 'string' && sealed.startsWith('not-auditable-beyond '))) {
    problems.push(`${at}/sealed: must be null or a sealed cut`);
  }
  return problems;
}

function versionName(version: string): string {
  return version === REPORT_TYPE ? 'v2' : 'v1';
}

function rowProblems(index: number, row: unknown, version: string): string[] {
  const at = `/specimens/${index}`;
  if (!isObject(row)) {
    return [`${at}: must be an object`];
  }
  const v2 = version === REPORT_TYPE;
  if (!sameKeys(row, v2 ? ROW_KEYS : ROW_KEYS_V1)) {
    return [`${at}: must have exactly the release report ${versionName(version)} row keys`];
  }
  const problems = v2 ? rowProblemsV2(at, row) : rowProblemsV1(at, row);
  if (typeof row.must_hold !== 'boolean') {
    problems.push(`${at}/must_hold: must be a boolean`);
  }
  return problems;
}

function fieldProblems(p: Json): string[] {
  const problems: string[] = [];
  if (!isObject(p.selector)) {
    problems.push('/selector: must be an object');
  }
  if (!isDigest(p.selection_digest)) {
    problems.push('/selection_digest: must be a sha256 digest');
  }
  if (!isStrings(p.erased) || !equalStrings(p.erased, sortedUnique(p.erased))) {
    problems.push('/erased: must be a sorted list of distinct ids');
  }
  const intervention = p.intervention;
  if (!isObject(intervention) || !['CODE', 'REVISION'].includes(intervention.strategy as string)) {
    problems.push('/intervention/strategy: must be CODE or REVISION');
  } else if (intervention.strategy === 'CODE' && !isDigest(intervention.digest)) {
    problems.push('/intervention/digest: a code intervention names its sha256 digest');
  }
  const baseline = p.baseline_code;
  if (!isStrings(baseline) || !baseline.every(isDigest) || !equalStrings(baseline, sortedUnique(baseline))) {
    problems.push('/baseline_code: must be a sorted list of distinct sha256 digests');
  }
  if (!isStrings(p.must_hold)) {
    problems.push('/must_hold: must be a list of tags');
  }
  if (!isCount(p.samples) || p.samples < 1) {
    problems.push('/samples: must be a positive integer');
  }
  for (const key of ['issued_at', 'issuer']) {
    if (typeof p[key] !== 'string') {
      problems.push(`/${key}: must be a string`);
    }
  }
  return problems;
}

type Row = { specimen: string; label: string; must_hold: boolean; layers_changed?: string[] };

function totalsMatch(given: unknown, rows: Row[], erased: number): boolean {
  const expected: Record<string, number> = {};
  for (const label of LABELS) {
    expected[label] = rows.filter(r => r.label === label).length;
  }
  expected.erased = erased;
  expected.specimens = rows.length;
  return (
    isObject(given) &&
    sameKeys(given, Object.keys(expected).sort()) &&
    Object.entries(expected).every(([k, n]) => isCount(given[k]) && given[k] === n)
  );
}

function gateMatches(given: unknown, failing: string[]): boolean {
  return (
    isObject(given) &&
    sameKeys(given, ['failing', 'passed']) &&
    given.passed === (failing.length === 0) &&
    isStrings(given.failing) &&
    equalStrings(given.failing, failing)
  );
}

/** The must-hold specimens that did not hold (``report_row_holds``), sorted. */
function failingOf(rows: Row[]): string[] {
  return rows
    .filter(r => r.must_hold && !(r.label === 'equivalent' && (r.layers_changed ?? []).length === 0))
    .map(r => r.specimen)
    .sort(byCodePoint);
}

/** The totals, the gate and (v2) the bound of a predicate of the report's shape are
 * those its rows give (``report_checks``' fourth check). */
export function totalsAndGateFollow(predicate: Json, version: string): boolean {
  const rows = predicate.specimens as Row[];
  return (
    totalsMatch(predicate.totals, rows, (predicate.erased as string[]).length) &&
    gateMatches(predicate.gate, failingOf(rows)) &&
    (version !== REPORT_TYPE || boundMatches(predicate.disclosure, rows.length))
  );
}

function boundMatches(given: unknown, rows: number): boolean {
  return (
    isObject(given) &&
    sameKeys(given, ['bits', 'bits_per_specimen']) &&
    isCount(given.bits) &&
    given.bits === BITS_PER_SPECIMEN * rows &&
    isCount(given.bits_per_specimen) &&
    given.bits_per_specimen === BITS_PER_SPECIMEN
  );
}

/** ``report_shape_problems``: problems of a release report predicate's shape (keys,
 * types, vocabularies) in ``version`` (the statement's predicate type). */
export function reportShapeProblems(predicate: unknown, version: string = REPORT_TYPE): string[] {
  if (version !== REPORT_TYPE && version !== REPORT_TYPE_V1) {
    throw new Error('not a release report version');
  }
  if (!isObject(predicate)) {
    return ['/: must be an object'];
  }
  if (!sameKeys(predicate, version === REPORT_TYPE ? KEYS : KEYS_V1)) {
    return [`/: must have exactly the release report ${versionName(version)} keys`];
  }
  const problems = fieldProblems(predicate);
  const rows = predicate.specimens;
  if (!Array.isArray(rows)) {
    return [...problems, '/specimens: must be a list'];
  }
  rows.forEach((row, index) => problems.push(...rowProblems(index, row, version)));
  return problems;
}

/** Problems of a release report predicate of ``version`` (the statement's predicate
 * type), as ``location: rule`` (empty: none). ``subjectDigest`` is the statement
 * subject's ``digest.sha256``. */
export async function reportProblems(
  predicate: unknown,
  subjectDigest: unknown,
  version: string = REPORT_TYPE
): Promise<string[]> {
  const problems = reportShapeProblems(predicate, version);
  if (problems.length > 0 || !isObject(predicate)) {
    return problems;
  }
  const checked = predicate.specimens as Row[];
  const erased = predicate.erased as string[];
  const ids = checked.map(r => r.specimen);
  if (!equalStrings(ids, sortedUnique(ids))) {
    return ['/specimens: must be sorted by specimen, each once'];
  }
  const recomputed = await selectionDigest(ids, erased);
  if (predicate.selection_digest !== recomputed) {
    return ['/selection_digest: differs from the digest of the listed specimens'];
  }
  if (subjectDigest !== recomputed.slice('sha256:'.length)) {
    return ["/selection_digest: is not the statement subject's digest"];
  }
  if (!totalsMatch(predicate.totals, checked, erased.length)) {
    return ['/totals: differ from the totals of the rows'];
  }
  if (!gateMatches(predicate.gate, failingOf(checked))) {
    return ['/gate: differs from the gate of the rows'];
  }
  if (version === REPORT_TYPE && !boundMatches(predicate.disclosure, checked.length)) {
    return ['/disclosure: differs from the bound of the rows'];
  }
  return [];
}
