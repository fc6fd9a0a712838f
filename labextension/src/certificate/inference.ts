/**
 * A certificate's governed inference (its ``inference`` section, ``_schema_v2.py``): the
 * grants the audit asked a model under, and per arm the calls the operator's endpoint
 * answered, those served again from the audit's own sealed record, and the tokens they
 * used. Counts and names only: the certificate carries no prompt or answer, so neither
 * can this view.
 */

import { el, section, table, text } from './dom';
import { asArray, asObject, isObject, Json } from './model';

/** The served-by column of calls answered by inference (on every row, or on none). */
export const INFERENCE_COLUMN = 'inference';

/** The arms in the certificate's order: the preparation's runs count as one arm. */
export const INFERENCE_ARMS = ['preparation', 'baseline', 'intervened', 'placebo'];

const ARM_COLUMNS: Array<[string, string]> = [
  ['asked', 'asked of the endpoint'],
  ['from_record', "from the audit's record"],
  ['input_tokens', 'input tokens'],
  ['output_tokens', 'output tokens']
];

const CAPS: Array<[string, string]> = [
  ['calls', 'calls'],
  ['input_tokens', 'input tokens'],
  ['output_tokens', 'output tokens'],
  ['wall_seconds', 'wall seconds']
];

function caps(value: unknown): string {
  const c = asObject(value);
  return CAPS.map(([key, name]) => `${name} ${text(c[key])}`).join(', ');
}

function seeded(value: unknown): HTMLElement {
  const state = typeof value === 'boolean' ? String(value) : 'none';
  const sentence =
    value === true
      ? 'Provider seed: set by the supervisor for each paired sample.'
      : value === false
        ? 'Provider seed: not varied, so arms asking the same request get the same recorded answer.'
        : 'Provider seed: not stated.';
  return el('p', { class: 'enclave-inference-seeded', 'data-seeded': state }, sentence);
}

/** The ``inference`` section, or null for an audit that authorised no inference. */
export function inference(predicate: Json): HTMLElement | null {
  if (!isObject(predicate.inference)) {
    return null;
  }
  const governed = predicate.inference;
  const arms = asObject(governed.arms);
  const armRows = INFERENCE_ARMS.map(arm => [arm, ...ARM_COLUMNS.map(([key]) => text(asObject(arms[arm])[key]))]);
  const grants = asArray(governed.grants).map(asObject);
  const grantRows = grants.map(g => [
    text(g.boundary),
    text(g.endpoint),
    text(g.model),
    asArray(g.vary).map(text).join(', ') || '—',
    caps(g.caps)
  ]);
  return section(
    'Governed inference',
    'enclave-inference',
    table(
      'enclave-inference-arms',
      "Model calls the record does not hold, per arm: asked of the operator's endpoint, or served again from the audit's sealed record",
      ['arm', ...ARM_COLUMNS.map(([, name]) => name)],
      armRows
    ),
    table(
      'enclave-inference-grants',
      'Grants: each boundary the audit could ask, its endpoint, the pinned model, the parameters it may vary and its caps (per audit)',
      ['boundary', 'endpoint', 'pinned model', 'vary', 'caps'],
      grantRows
    ),
    seeded(governed.seeded)
  );
}
