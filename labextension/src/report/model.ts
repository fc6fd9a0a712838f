/**
 * Reading a release report's statement for display: one row per specimen (label,
 * reason, sealed cut, must-hold, whether it fails the gate; a v1 row also the layers
 * that changed), the totals, the gate, the digests and (v2) the disclosure bound.
 * Display never implies validity: the viewer says "not verified" until Verify has run.
 */

import { asArray, asNumber, asObject, isObject, Json } from '../certificate/model';

export const REPORT_TYPE = 'https://replay-enclave.dev/release-report/v2';
export const REPORT_TYPE_V1 = 'https://replay-enclave.dev/release-report/v1';
export const SUBJECT = 'release-selection';
export const LABELS = ['decision-changed', 'layer-changed', 'equivalent', 'inconclusive', 'not-auditable'] as const;
export const REASONS = ['refused', 'failed', 'baseline-not-reproduced', 'observable-only'] as const;

export interface ReportRow {
  specimen: string;
  audit: string | null;
  certificate: string | null;
  label: string;
  reason: string | null;
  /** The specimen's sealed cut (v2; fixed at capture). */
  sealed: string | null;
  /** The layers that changed (v1 rows only; v2 leaves them in each certificate). */
  layersChanged: string[];
  mustHold: boolean;
  /** A must-hold specimen named by the gate as failing. */
  failing: boolean;
}

export interface ReportModel {
  version: 1 | 2;
  subject: string;
  gatePassed: boolean | null;
  failing: string[];
  rows: ReportRow[];
  /** Per label, then ``erased`` and ``specimens``, in that order (absent: null). */
  totals: Array<[string, number | null]>;
  selectionDigest: string;
  intervention: Array<[string, string]>;
  baselineCode: string[];
  mustHoldTags: string[];
  erased: string[];
  samples: number | null;
  issuedAt: string;
  issuer: string;
  /** Bits the code under audit could choose in the report (v2; v1: null). */
  bound: { bits: number | null; perSpecimen: number | null } | null;
}

function strings(value: unknown): string[] {
  return asArray(value).map(v => String(v));
}

function optionalString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

export function isReportStatement(predicateType: string): boolean {
  return predicateType === REPORT_TYPE || predicateType === REPORT_TYPE_V1;
}

/** The report's view model from its statement's predicate type, subject name and
 * predicate. */
export function readReport(predicateType: string, subject: string, predicate: Json): ReportModel {
  const gate = asObject(predicate.gate);
  const failing = strings(gate.failing);
  const rows = asArray(predicate.specimens)
    .filter(isObject)
    .map(
      (r): ReportRow => ({
        specimen: String(r.specimen ?? ''),
        audit: optionalString(r.audit),
        certificate: optionalString(r.certificate),
        label: String(r.label ?? ''),
        reason: optionalString(r.reason),
        sealed: optionalString(r.sealed),
        layersChanged: strings(r.layers_changed),
        mustHold: r.must_hold === true,
        failing: failing.includes(String(r.specimen ?? ''))
      })
    );
  const totals = asObject(predicate.totals);
  const intervention = asObject(predicate.intervention);
  const distribution = asObject(intervention.distribution);
  const described: Array<[string, string]> = [['strategy', String(intervention.strategy ?? '—')]];
  if (intervention.strategy === 'CODE') {
    described.push(['candidate', String(intervention.target ?? '—')], ['candidate code digest', String(intervention.digest ?? '—')]);
    if (distribution.name !== undefined) {
      described.push(['distribution', `${String(distribution.name)} ${String(distribution.version ?? '')}`.trim()]);
    }
  } else if (intervention.revision !== undefined) {
    described.push(['revision', String(intervention.revision)]);
  }
  const disclosure = asObject(predicate.disclosure);
  const v2 = predicateType === REPORT_TYPE;
  return {
    version: v2 ? 2 : 1,
    subject,
    gatePassed: typeof gate.passed === 'boolean' ? gate.passed : null,
    failing,
    rows,
    totals: [...LABELS, 'erased', 'specimens'].map(name => [name, asNumber(totals[name])]),
    selectionDigest: String(predicate.selection_digest ?? '—'),
    intervention: described,
    baselineCode: strings(predicate.baseline_code),
    mustHoldTags: strings(predicate.must_hold),
    erased: strings(predicate.erased),
    samples: asNumber(predicate.samples),
    issuedAt: String(predicate.issued_at ?? '—'),
    issuer: String(predicate.issuer ?? '—'),
    bound: v2 ? { bits: asNumber(disclosure.bits), perSpecimen: asNumber(disclosure.bits_per_specimen) } : null
  };
}
