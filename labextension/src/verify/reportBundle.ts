/**
 * Verifying a release report bundle (``<report>.bundle.json``) in the browser, as
 * ``ledger.certificates.verify_report_bundle`` does, with the same six named checks and
 * the same sentences:
 *
 * ::
 *
 *     {"mediaType": REPORT_BUNDLE_MEDIA_TYPE,
 *      "envelope": <the report's DSSE envelope>,
 *      "report_entry": {"entry": base64(canonical bytes), "proof": <tlog-proof text>},
 *      "certificates": [<a certificate bundle per certificate the report names>]}
 *
 * 1. ``bundle``                  — the bundle's keys and media type.
 * 2. ``signature and statement`` — the envelope verifies with the issuer key, its
 *                                  statement is a release report (v2, or v1) of the
 *                                  report's shape (``reportShapeProblems``).
 * 3. ``selection digest``        — recomputed from the listed specimens and erased ids.
 * 4. ``certificates``            — each row's certificate is in the bundle and verifies
 *                                  as its own bundle (``./bundle``); it is about the row's
 *                                  specimen, of the report's intervention and sample
 *                                  count, and the row's outcome follows from it.
 * 5. ``totals and gate``         — recomputed from the rows, with (v2) the bound.
 * 6. ``ledger entry``            — the report entry is proven in a checkpoint the log key
 *                                  signed, is ``release.reported`` for this selection,
 *                                  names this report's id and envelope digest, with its
 *                                  member count and gate.
 *
 * Every check after the first runs, as in Python, unless the statement cannot be read.
 */

import { reportOutcome, layersChanged } from '../report/outcome';
import { REPORT_TYPE, REPORT_TYPE_V1, SUBJECT } from '../report/model';
import { reportShapeProblems, selectionDigest, totalsAndGateFollow } from '../report/shape';
import { envelopeDigest, verifyBundle } from './bundle';
import { canonicalJson } from './canonical';
import { TrustedKey } from './key';
import { NO_WITNESSES, provenEntry, Witnesses } from './proven';
import { decodeBase64, LogKey } from './tlog';
import { Failed, isObject, JsonObject, State, STATEMENT_TYPE, STEP_FUNCTIONS, VerifyReport } from './verifier';

export const REPORT_BUNDLE_MEDIA_TYPE = 'application/vnd.replay-enclave.report-bundle.v1+json';
export const REPORT_BUNDLE_CHECKS = [
  'bundle',
  'signature and statement',
  'selection digest',
  'certificates',
  'totals and gate',
  'ledger entry'
] as const;

const VERSIONS: Readonly<Record<string, string>> = {
  [REPORT_TYPE]: 'release report v2',
  [REPORT_TYPE_V1]: 'release report v1'
};

type Check = [string, boolean, string];
type Row = JsonObject & { specimen: string; certificate: string | null; must_hold: boolean };

/** Whether ``document`` says it is a report bundle (not whether it is a sound one). */
export function isReportBundle(document: unknown): document is JsonObject {
  return isObject(document) && document.mediaType === REPORT_BUNDLE_MEDIA_TYPE;
}

function hasShape(bundle: unknown): bundle is JsonObject & { envelope: JsonObject; certificates: JsonObject[] } {
  return (
    isObject(bundle) &&
    Object.keys(bundle).sort().join(',') === 'certificates,envelope,mediaType,report_entry' &&
    bundle.mediaType === REPORT_BUNDLE_MEDIA_TYPE &&
    isObject(bundle.envelope) &&
    Array.isArray(bundle.certificates) &&
    bundle.certificates.every(isObject)
  );
}

function statementOf(envelope: JsonObject): JsonObject {
  const payload = decodeBase64(String(envelope.payload));
  if (payload === null) {
    throw new TypeError('payload');
  }
  const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  if (!isObject(value)) {
    throw new TypeError('statement');
  }
  return value;
}

/** The envelope's DSSE form and signature, as ``verify_dsse`` with the one trusted key. */
async function signed(envelope: JsonObject, issuer: TrustedKey): Promise<boolean> {
  const state = new State(envelope, issuer);
  try {
    await STEP_FUNCTIONS[0][1](state);
    await STEP_FUNCTIONS[1][1](state);
    return true;
  } catch (error) {
    if (error instanceof Failed) {
      return false;
    }
    throw error;
  }
}

const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);

function outcomeFollows(type: string, row: Row, certified: JsonObject | null): boolean {
  if (type === REPORT_TYPE_V1) {
    if (certified === null) {
      return row.label === 'not-auditable';
    }
    // v1 labelled an equivalent audit equivalent and listed the layers that changed
    const label = certified.classification === 'equivalent' ? 'equivalent' : reportOutcome(certified)[0];
    return label === row.label && same(layersChanged(certified), row.layers_changed);
  }
  if (certified === null) {
    return same(reportOutcome(null, row.audit === null), [row.label, row.reason]);
  }
  return row.audit !== null && same(reportOutcome(certified), [row.label, row.reason]);
}

function sameIntervention(request: JsonObject, declared: JsonObject): boolean {
  if (declared.strategy === 'CODE') {
    const candidate = request.candidate ?? {};
    return (
      request.strategy === 'CODE' &&
      isObject(candidate) &&
      same(candidate, { target: declared.target ?? null, digest: declared.digest ?? null })
    );
  }
  return request.strategy === 'REVISION' && same(request.revision, declared.revision);
}

type Recorded = (selection: unknown, reportId: string, digest: string) => [JsonObject | null, string];

/** ``report_checks``: steps 2–6 with the bundle's certificates and proven entry. */
async function reportChecks(
  envelope: JsonObject,
  issuer: TrustedKey,
  found: Map<string, JsonObject>,
  memberOk: (certificate: JsonObject) => Promise<boolean>,
  recordedOf: Recorded
): Promise<Check[]> {
  let statement: JsonObject;
  try {
    if (!(await signed(envelope, issuer))) {
      throw new TypeError('signature');
    }
    statement = statementOf(envelope);
  } catch {
    return [['signature and statement', false, 'invalid envelope or signature']];
  }
  const type = String(statement.predicateType);
  if (statement._type !== STATEMENT_TYPE || !(type in VERSIONS)) {
    return [['signature and statement', false, 'not a report']];
  }
  const predicate = statement.predicate as JsonObject;
  const problems = reportShapeProblems(predicate, type);
  if (problems.length > 0) {
    return [['signature and statement', false, `not a ${VERSIONS[type]}: ${problems[0]}`]];
  }
  const checks: Check[] = [['signature and statement', true, VERSIONS[type]]];
  const rows = predicate.specimens as Row[];
  // selection
  const recomputed = await selectionDigest(
    rows.map(r => r.specimen),
    (predicate.erased as string[] | null) ?? []
  );
  const subjects = Array.isArray(statement.subject) && statement.subject.length > 0 ? statement.subject : [{}];
  const subject = isObject(subjects[0]) ? subjects[0] : {};
  const digest = isObject(subject.digest) ? subject.digest.sha256 : undefined;
  const selected =
    recomputed === predicate.selection_digest && subject.name === SUBJECT && `sha256:${String(digest)}` === recomputed;
  checks.push(['selection digest', selected, selected ? 'recomputed' : 'differs']);
  // every certificate
  const bad: string[] = [];
  for (const row of rows) {
    if (row.certificate === null) {
      if (!outcomeFollows(type, row, null)) {
        bad.push(row.specimen);
      }
      continue;
    }
    const certificate = found.get(row.certificate);
    if (certificate === undefined || !(await memberOk(certificate))) {
      bad.push(row.specimen);
      continue;
    }
    const certified = statementOf(certificate).predicate as JsonObject;
    const request = certified.request as JsonObject;
    if (
      request.specimen !== row.specimen ||
      !sameIntervention(request, isObject(predicate.intervention) ? predicate.intervention : {}) ||
      !same(request.samples, predicate.samples) ||
      !outcomeFollows(type, row, certified)
    ) {
      bad.push(row.specimen);
    }
  }
  checks.push(['certificates', bad.length === 0, bad.length === 0 ? `${rows.length} checked` : `failed: ${bad.join(', ')}`]);
  // totals and gate
  const consistent = totalsAndGateFollow(predicate, type);
  checks.push(['totals and gate', consistent, consistent ? 'recomputed' : 'differ']);
  // the ledger recorded this very report
  const envelopeHash = await envelopeDigest(envelope);
  const reportId = 'rr-' + envelopeHash.slice('sha256:'.length, 'sha256:'.length + 16);
  const [body, said] = recordedOf(predicate.selection_digest, reportId, envelopeHash);
  const gate = isObject(predicate.gate) ? predicate.gate : {};
  const recorded =
    body !== null &&
    body.selection_digest === predicate.selection_digest &&
    body.specimens === rows.length &&
    body.gate_passed === gate.passed;
  checks.push(['ledger entry', recorded, body !== null && !recorded ? "the entry's member count or gate differs" : said]);
  return checks;
}

/** Verify ``bundle`` (a parsed file, or anything else) with the trusted issuer key and
 * the trusted log key alone. */
export async function verifyReportBundle(
  bundle: unknown,
  issuer: TrustedKey,
  log: LogKey,
  witnesses: Witnesses = NO_WITNESSES
): Promise<VerifyReport> {
  let checks: Check[];
  if (!hasShape(bundle)) {
    checks = [['bundle', false, 'not a release report bundle (keys or media type)']];
  } else {
    const members = new Map<string, JsonObject>();
    for (const member of bundle.certificates) {
      try {
        members.set(await envelopeDigest(member.envelope), member);
      } catch {
        continue; // a malformed member is simply not a certificate
      }
    }
    const [fields, proven] = await provenEntry(bundle.report_entry, log, witnesses);
    const recorded: Recorded = (selection, reportId, digest) => {
      if (fields === null) {
        return [null, proven];
      }
      const body = fields.body as JsonObject;
      const ours =
        fields.kind === 'release.reported' &&
        fields.subject === selection &&
        body.report_id === reportId &&
        body.envelope_digest === digest;
      return ours ? [body, `release.reported, ${proven}`] : [null, "not this report's entry"];
    };
    const envelopes = new Map([...members].map(([digest, member]) => [digest, member.envelope as JsonObject]));
    const memberOk = async (certificate: JsonObject): Promise<boolean> =>
      (await verifyBundle(members.get(await envelopeDigest(certificate)), issuer, log, witnesses)).ok;
    checks = [
      ['bundle', true, `${members.size} certificate bundles`],
      ...(await reportChecks(bundle.envelope, issuer, envelopes, memberOk, recorded))
    ];
  }
  return {
    ok: checks.every(([, ok]) => ok),
    checks: checks.map(([name, ok, detail], index) => ({ step: index + 1, name, ok, detail })),
    finding: null
  };
}
