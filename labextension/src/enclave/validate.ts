/**
 * The audit request's rules, checked in the browser before anything is sent, in the
 * order and with the codes the service answers with (``enclave/service/_models.py``,
 * ``enclave/replay/_intervention_model.py``, ``enclave/governance/_intake.py``):
 *
 * 1. the intervention part (strategy and its parameters), strictly: 400 ``bad_input``
 *    with the intervention model's one line;
 * 2. the body's shape (strict types, bounds, a visible purpose): 422 ``invalid_request``;
 * 3. what admission refuses before charging anything: a delta too small to change any
 *    value, 400 ``no_effect``.
 *
 * With ``from_cut``, ``checkCut`` then checks what admission checks on the sealed
 * metadata (``enclave/replay/_cuts.py`` ``check_cut_in_record``), on the specimen
 * detail the form read: the cut was recorded, the target call does not lie before it,
 * no randomness was drawn before it (400 ``bad_input``). A revision's swapped calls are
 * not named in the detail, so for a revision only the cut and the randomness are
 * checked here.
 *
 * The service decides in the end; these checks only spare a round trip and never let
 * through what it would refuse. Messages name the field, never echo what was typed.
 */

export interface Refusal {
  status: number;
  code: string;
  field: string;
  message: string;
}

export const MAX_SEED = 2 ** 53 - 1 - 100_000;
export const MAX_DELTA = 1e6;
const SMALLEST_NORMAL = 2.2250738585072014e-308;

export const MESSAGES: Record<string, string> = {
  strategy: 'the strategy must be nullify, replace, perturb or revision',
  call_id: 'a field intervention needs a call id: 1-256 printable characters',
  field: 'the field must be a JSON Pointer such as /name or /a/b (~0, ~1 escapes)',
  target: 'a field intervention names exactly one of a field or a bundle',
  value: 'replace needs a value: any JSON value (a bundle: an object of field values)',
  delta: 'perturb needs a delta: a finite, non-zero number between -1e6 and 1e6',
  revision: 'a revision looks like NAME=IDENTITY, e.g. model=r2',
  from_cut: 'a cut name is 1-64 letters, digits or _ . : - and starts with a letter or digit',
  detail: 'detail is coarse or per-sample (every count, where the policy grants it)',
  // ``enclave/replay/_cuts.py``, word for word
  no_such_cut: 'the specimen recorded no cut of that name',
  target_before: "the intervention's target lies before the cut: replay from an earlier cut or in full",
  random_before: 'the run drew randomness before the cut: replay it in full'
};

/** ``AuditBody.from_cut``'s pattern (the service's regex engine: ``$`` is the end). */
export const CUT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

const STRATEGIES = ['nullify', 'replace', 'perturb', 'revision'] as const;
const PARAMETERS = ['call_id', 'field', 'value', 'delta', 'revision'] as const;
const TAKES: Record<string, readonly string[]> = {
  nullify: ['call_id', 'field'],
  replace: ['call_id', 'field', 'value'],
  perturb: ['call_id', 'field', 'delta'],
  revision: ['revision']
};
const BODY_KEYS = new Set([
  'specimen_id', 'call_id', 'field', 'strategy', 'value', 'delta', 'revision',
  'samples', 'seed', 'tolerances', 'purpose', 'policy_id', 'from_cut', 'detail'
]);

// Python's str.isprintable(): no control, format, surrogate, private-use, unassigned or
// separator character, the ASCII space excepted
const NOT_PRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|[^\P{Zs} ]/u;
// a name the ledger is asked for holds no control character (the service's ``NO_CONTROL``)
const CONTROL = /[\x00-\x1f\x7f]/;
// governance.check_purpose: control, format, surrogates, private use, unassigned, line
// and paragraph separators
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u;
const ONLY_SPACES = /^\p{Zs}*$/u;

/** ``enclave.replay._pointer.is_pointer``, step for step. */
export function isPointer(text: string): boolean {
  if (!text.startsWith('/') || text.length < 2) {
    return false;
  }
  return text
    .slice(1)
    .split('/')
    .every(token => token !== '' && !token.split('~0').join('').split('~1').join('').includes('~'));
}

/** Length in code points, as Python counts a ``str``. */
export function codePoints(text: string): number {
  return [...text].length;
}

function bad(field: string, message: string): Refusal {
  return { status: 400, code: 'bad_input', field, message };
}

function invalid(field: string, message: string): Refusal {
  return { status: 422, code: 'invalid_request', field, message };
}

function isName(value: unknown, min: number, max: number): value is string {
  return (
    typeof value === 'string' &&
    codePoints(value) >= min &&
    codePoints(value) <= max &&
    value.trim() !== '' &&
    !NOT_PRINTABLE.test(value)
  );
}

/** A purpose is 1-500 characters of visible text (``check_purpose``). */
export function isVisiblePurpose(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    codePoints(value) >= 1 &&
    codePoints(value) <= 500 &&
    !INVISIBLE.test(value) &&
    !ONLY_SPACES.test(value)
  );
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isStrictInt(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** Step 1: the one intervention model (``parse_intervention``). */
function checkIntervention(body: Record<string, unknown>): Refusal | null {
  const given = (key: string): boolean =>
    body[key] !== undefined && (body[key] !== null || key === 'value');
  const strategy = body.strategy;
  if (typeof strategy !== 'string' || !(STRATEGIES as readonly string[]).includes(strategy)) {
    return bad('strategy', MESSAGES.strategy);
  }
  for (const name of PARAMETERS) {
    if (given(name) && !TAKES[strategy].includes(name)) {
      return bad(name, `that strategy takes no ${name.replace('_', ' ')}`);
    }
  }
  if (strategy === 'revision') {
    const revision = body.revision;
    if (!isName(revision, 3, 256)) {
      return bad('revision', MESSAGES.revision);
    }
    const at = revision.indexOf('=');
    if (at < 0 || !revision.slice(0, at).trim() || !revision.slice(at + 1).trim()) {
      return bad('revision', MESSAGES.revision);
    }
    return null;
  }
  if (!isName(body.call_id, 1, 256)) {
    return bad('call_id', MESSAGES.call_id);
  }
  if (!given('field')) {
    return bad('field', MESSAGES.target);
  }
  if (!isName(body.field, 1, 256) || !isPointer(body.field)) {
    return bad('field', MESSAGES.field);
  }
  if (strategy === 'replace' && !given('value')) {
    return bad('value', MESSAGES.value);
  }
  if (strategy === 'perturb') {
    const delta = body.delta;
    if (!isFiniteNumber(delta) || delta === 0 || Math.abs(delta) > MAX_DELTA) {
      return bad('delta', MESSAGES.delta);
    }
  }
  return null;
}

/** Step 2: the body's shape (``AuditBody``: strict, bounded, extra keys forbidden). */
function checkShape(body: Record<string, unknown>): Refusal | null {
  for (const key of Object.keys(body)) {
    if (!BODY_KEYS.has(key)) {
      return invalid('body', 'the request holds a key the service does not take');
    }
  }
  const optionalText = (key: string, min: number, max: number, name = false): boolean =>
    body[key] === undefined ||
    body[key] === null ||
    (typeof body[key] === 'string' &&
      codePoints(body[key] as string) >= min &&
      codePoints(body[key] as string) <= max &&
      !(name && CONTROL.test(body[key] as string)));
  if (typeof body.specimen_id !== 'string' || !optionalText('specimen_id', 1, 128, true)) {
    return invalid('specimen_id', 'choose a specimen');
  }
  if (!optionalText('call_id', 1, 256, true)) {
    return invalid('call_id', 'the call id is 1-256 characters');
  }
  if (!optionalText('field', 1, 256, true)) {
    return invalid('field', 'the field is 1-256 characters');
  }
  if (!optionalText('revision', 3, 256)) {
    return invalid('revision', 'the revision is 3-256 characters');
  }
  if (!optionalText('policy_id', 1, 128, true)) {
    return invalid('policy_id', 'the policy id is 1-128 characters');
  }
  if (body.from_cut !== undefined && body.from_cut !== null && !(typeof body.from_cut === 'string' && CUT_NAME.test(body.from_cut))) {
    return invalid('from_cut', MESSAGES.from_cut);
  }
  if (body.detail !== undefined && body.detail !== 'coarse' && body.detail !== 'per-sample') {
    return invalid('detail', MESSAGES.detail);
  }
  if (!isStrictInt(body.samples, 2, 100_000)) {
    return invalid('samples', 'samples must be a whole number from 2 to 100000');
  }
  if (!isStrictInt(body.seed, 0, MAX_SEED)) {
    return invalid('seed', `the seed must be a whole number from 0 to ${MAX_SEED}`);
  }
  const tolerances = body.tolerances;
  if (tolerances !== undefined && tolerances !== null) {
    if (typeof tolerances !== 'object' || Array.isArray(tolerances)) {
      return invalid('tolerances', 'tolerances map a layer to a number, exact or ignore');
    }
    const entries = Object.entries(tolerances as Record<string, unknown>);
    if (
      entries.length > 16 ||
      entries.some(([, v]) => !(isFiniteNumber(v) || typeof v === 'string'))
    ) {
      return invalid('tolerances', 'tolerances map at most 16 layers to a number, exact or ignore');
    }
  }
  if (!isVisiblePurpose(body.purpose)) {
    return invalid('purpose', 'a purpose must be visible text (no control or invisible characters)');
  }
  return null;
}

/** Step 3: admission's own check before charging (``governance._intake._check_effect``). */
function checkEffect(body: Record<string, unknown>): Refusal | null {
  const delta = body.delta;
  if (typeof delta === 'number' && (delta === 0 || Math.abs(delta) < SMALLEST_NORMAL)) {
    return { status: 400, code: 'no_effect', field: 'delta', message: 'the delta is zero or too small to change any value' };
  }
  return null;
}

/** The first refusal the service would answer ``POST /audits`` with, or null. */
export function checkAuditBody(body: unknown): Refusal | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid('body', 'the request must be a JSON object');
  }
  const record = body as Record<string, unknown>;
  return checkIntervention(record) ?? checkShape(record) ?? checkEffect(record);
}

/** What the specimen detail says of the record: its calls in record order, its cuts. */
export interface Recorded {
  calls: ReadonlyArray<{ call_id: string; kind: string }>;
  cuts: ReadonlyArray<{ name: string; call_id: string }>;
}

/**
 * Admission's cut checks on the detail's metadata, for a body that passed
 * ``checkAuditBody`` and names ``from_cut`` (null when it names none):
 *
 * 1. the specimen recorded a cut of that name;
 * 2. walking the calls up to the cut, none is the intervention's target (its
 *    ``call_id``; a revision's swapped calls are left to the service);
 * 3. and none drew randomness (a call of kind ``random``).
 */
export function checkCut(body: Record<string, unknown>, recorded: Recorded): Refusal | null {
  const name = body.from_cut;
  if (typeof name !== 'string') {
    return null;
  }
  const cut = recorded.cuts.find(c => c.name === name);
  if (cut === undefined || !recorded.calls.some(c => c.call_id === cut.call_id)) {
    return bad('from_cut', MESSAGES.no_such_cut);
  }
  const target = body.strategy === 'revision' ? null : body.call_id;
  for (const call of recorded.calls) {
    if (call.call_id === target) {
      return bad('from_cut', MESSAGES.target_before);
    }
    if (call.kind === 'random') {
      return bad('from_cut', MESSAGES.random_before);
    }
    if (call.call_id === cut.call_id) {
      break;
    }
  }
  return null;
}
