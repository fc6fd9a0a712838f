/**
 * The request form's pure half, as the notebook panel has it (``jupyter_ext/_form.py``):
 * specimen → call → active policy → parameters → start from cut → purpose, and the body
 * it sends.
 * The widgets live in ``form.ts``; this module has no DOM so it can be tested alone.
 */

import { checkAuditBody, checkCut, Refusal } from './validate';

export interface Call {
  call_id: string;
  kind: string;
  name: string;
  alias: string | null;
  resolved: string | null;
  schema_id: string | null;
}

/** A cut the specimen recorded: its name and its step's call id (never its state). */
export interface Cut {
  name: string;
  call_id: string;
}

/** ``GET /specimens/{id}``, the parts the form reads (metadata only). */
export interface SpecimenDetail {
  calls: Call[];
  /** In the order the run reached them; absent from a service that predates cuts. */
  cuts?: Cut[];
  /** ``auditable`` or ``not-auditable-beyond <cut>``; null for a specimen sealed before cuts. */
  sealed_auditability?: string | null;
}

export interface Policy {
  id: string;
  version: number;
  tool: string;
  schema_id: string;
  field: string;
  strategy: string;
  params: Record<string, unknown>;
  status: string;
}

/** The declared-revision choice that needs no policy (``_form.REVISION``). */
export const REVISION = '__revision__';

export interface Choice<T> {
  label: string;
  value: T;
}

export function callOptions(calls: readonly Call[]): Choice<string>[] {
  return calls.map(call => {
    const alias = call.alias ? ` ${call.alias}→${call.resolved}` : '';
    return { label: `${call.call_id} · ${call.kind} ${call.name}${alias}`, value: call.call_id };
  });
}

/** The "Start from cut" choices: a full replay (the empty value), then each cut. */
export function cutOptions(cuts: readonly Cut[]): Choice<string>[] {
  return [
    { label: '— none: full replay —', value: '' },
    ...cuts.map(cut => ({ label: `${cut.name} · ${cut.call_id}`, value: cut.name }))
  ];
}

function matches(policy: Policy, call: Call | null): boolean {
  if (call === null) {
    return true;
  }
  return (
    [null, undefined, '', call.name].includes(policy.tool) &&
    [null, undefined, '', call.schema_id].includes(policy.schema_id)
  );
}

/** Active policies that apply to the chosen call, then the declared-revision choice. */
export function policyOptions(policies: readonly Policy[], call: Call | null): Choice<Policy | typeof REVISION>[] {
  const out: Choice<Policy | typeof REVISION>[] = policies
    .filter(p => matches(p, call))
    .map(p => ({ label: `${p.id} v${p.version} · ${p.strategy} ${p.field ?? ''}`.trim(), value: p }));
  out.push({ label: 'declared revision swap (e.g. model=r2)', value: REVISION });
  return out;
}

export interface Prefill {
  revision?: string;
  value?: string;
  delta?: string;
}

/** Form values suggested by a policy's authorised parameters (the first alternate). */
export function prefill(policy: Policy): Prefill {
  const params = policy.params ?? {};
  const strategy = String(policy.strategy ?? '').toLowerCase();
  const alternates = Array.isArray(params.alternates) ? params.alternates : [];
  if (strategy === 'revision' && alternates.length) {
    return { revision: `${params.revision_point ?? 'model'}=${alternates[0]}` };
  }
  if (strategy === 'replace' && alternates.length) {
    return { value: JSON.stringify(alternates[0]) };
  }
  if (strategy === 'perturb' && Array.isArray(params.delta) && params.delta.length) {
    return { delta: String(Number(params.delta[0])) };
  }
  return {};
}

/** What the analyst typed, as text (numbers are parsed here, strictly). */
export interface FormInput {
  specimenId: string;
  callId: string | null;
  policy: Policy | typeof REVISION | null;
  value: string;
  delta: string;
  revision: string;
  samples: string;
  seed: string;
  tolerances: string;
  purpose: string;
  /** A recorded cut's name to start every run from; empty for a full replay. */
  fromCut?: string;
  /** Every count (a v2 certificate, a larger bound), where the policy grants it. */
  perSample?: boolean;
}

export type Built = { body: Record<string, unknown> } | { refusal: Refusal };

function formError(field: string, message: string): { refusal: Refusal } {
  return { refusal: { status: 422, code: 'invalid_request', field, message } };
}

const WHOLE = /^[0-9]{1,16}$/;
// a JSON number: what Python's float() takes for a delta, without "nan"/"inf" spellings
const NUMBER = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;

/** ``"score=0.001, readback=ignore"`` → ``{score: 0.001, readback: "ignore"}``. */
export function parseTolerances(text: string): Record<string, number | string> | null {
  const out: Record<string, number | string> = {};
  for (const item of text.replace(/;/g, ',').split(',').map(part => part.trim()).filter(Boolean)) {
    const at = item.indexOf('=');
    const name = at < 0 ? '' : item.slice(0, at).trim();
    const value = at < 0 ? '' : item.slice(at + 1).trim();
    if (!name || !value) {
      return null;
    }
    out[name] = NUMBER.test(value) ? Number(value) : value;
  }
  return out;
}

function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // a bare word is a string value
  }
}

/**
 * The ``POST /audits`` body the form describes, or the refusal the service would give.
 * ``recorded`` is the chosen specimen's detail: with it, a chosen cut is checked as
 * admission checks it on the sealed metadata (``checkCut``).
 */
export function buildBody(input: FormInput, recorded: SpecimenDetail | null = null): Built {
  if (!input.specimenId) {
    return formError('specimen_id', 'choose a specimen');
  }
  if (!WHOLE.test(input.samples.trim())) {
    return formError('samples', 'samples must be a whole number from 2 to 100000');
  }
  if (!WHOLE.test(input.seed.trim())) {
    return formError('seed', 'the seed must be a whole number');
  }
  const tolerances = parseTolerances(input.tolerances);
  if (tolerances === null) {
    return formError('tolerances', 'tolerances look like LAYER=VALUE, e.g. score=0.001');
  }
  const body: Record<string, unknown> = {
    specimen_id: input.specimenId,
    purpose: input.purpose,
    samples: Number(input.samples.trim()),
    seed: Number(input.seed.trim())
  };
  if (Object.keys(tolerances).length) {
    body.tolerances = tolerances;
  }
  const policy = input.policy;
  if (policy === null || policy === REVISION || policy.strategy.toLowerCase() === 'revision') {
    body.strategy = 'revision';
    if (input.revision.trim()) {
      body.revision = input.revision.trim();
    }
    if (policy !== null && policy !== REVISION) {
      body.policy_id = policy.id;
    }
  } else {
    const strategy = policy.strategy.toLowerCase();
    body.strategy = strategy;
    body.call_id = input.callId;
    body.field = policy.field;
    body.policy_id = policy.id;
    if (strategy === 'replace' && input.value.trim()) {
      body.value = jsonValue(input.value);
    }
    if (strategy === 'perturb') {
      const text = input.delta.trim();
      if (!NUMBER.test(text)) {
        return { refusal: { status: 400, code: 'bad_input', field: 'delta', message: 'perturb needs a delta: a finite, non-zero number between -1e6 and 1e6' } };
      }
      body.delta = Number(text);
    }
  }
  if (input.fromCut) {
    body.from_cut = input.fromCut; // sent only when a cut is chosen
  }
  if (input.perSample) {
    body.detail = 'per-sample'; // sent only when asked for: the default is coarse
  }
  const refusal =
    checkAuditBody(body) ??
    (recorded === null ? null : checkCut(body, { calls: recorded.calls, cuts: recorded.cuts ?? [] }));
  return refusal === null ? { body } : { refusal };
}
