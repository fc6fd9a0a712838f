/**
 * Verifying a certificate bundle (``<audit>.bundle.json``) in the browser, as
 * ``ledger.certificates.verify_bundle`` does, with the same seven named checks:
 *
 * ::
 *
 *     {"mediaType": BUNDLE_MEDIA_TYPE,
 *      "envelope": <the DSSE envelope>,
 *      "specimen_entry":    {"entry": base64(canonical bytes), "proof": <tlog-proof text>},
 *      "certificate_entry": {"entry": base64(canonical bytes), "proof": <tlog-proof text>}}
 *
 * 1–4. ``envelope`` (the bundle's keys and media type, then the envelope's), ``signature``,
 *      ``statement``, ``predicate`` — ``./verifier`` on the bundle's envelope.
 * 5. ``checkpoint``   — both proofs are C2SP tlog-proofs carrying the same checkpoint, a
 *                       signed note the trusted log key signed, of the log key's origin.
 * 6. ``subject``      — the specimen entry is ``specimen.sealed`` for the subject's specimen
 *                       with the subject's manifest digest, its index and SHA-256 are
 *                       ``predicate.ledger``'s, and its leaf is proven in the checkpoint.
 * 7. ``ledger_entry`` — the certificate entry is ``certificate.issued`` naming this
 *                       envelope's digest and specimen, after the specimen's entry, and its
 *                       leaf is proven in the checkpoint.
 *
 * Given witnesses (``Witnesses``: trusted cosigner keys and a quorum), the checkpoint
 * must carry ``quorum`` of their cosignatures, as ``verify --witness`` requires. Failure
 * details are ``_bundle.py``'s sentences.
 */

import { canonicalJson } from './canonical';
import { hex, TrustedKey } from './key';
import { NO_WITNESSES, openCheckpoint, provenLeaf, Witnesses } from './proven';
import { Checkpoint, LogKey, parseProof, sha256, TlogInvalid, TlogProof } from './tlog';
import { Failed, isObject, JsonObject, runSteps, State, Step, STEP_FUNCTIONS, VerifyReport } from './verifier';

export const BUNDLE_MEDIA_TYPE = 'application/vnd.replay-enclave.certificate-bundle.v1+json';
export const BUNDLE_STEPS = ['envelope', 'signature', 'statement', 'predicate', 'checkpoint', 'subject', 'ledger_entry'] as const;

const PARTS = ['specimen_entry', 'certificate_entry'] as const;
type Part = (typeof PARTS)[number];
const SUBJECT_PREFIX = 'specimen:';

/** Whether ``document`` says it is a bundle (not whether it is a sound one). */
export function isBundle(document: unknown): document is JsonObject {
  return isObject(document) && document.mediaType === BUNDLE_MEDIA_TYPE;
}

class BundleState extends State {
  bundle: Record<Part, { entry: string; proof: string }> | null = null;
  checkpoint: Checkpoint | null = null;

  constructor(
    raw: unknown,
    trusted: TrustedKey,
    readonly log: LogKey,
    readonly witnesses: Witnesses
  ) {
    super(raw, trusted);
  }
}

const sameKeys = (value: JsonObject, keys: string[]): boolean =>
  Object.keys(value).sort().join('\0') === [...keys].sort().join('\0');

async function bundleEnvelope(s: BundleState): Promise<string> {
  const raw = isObject(s.raw) ? s.raw : {};
  const parts = PARTS.map(name => raw[name]);
  if (
    !sameKeys(raw, ['mediaType', 'envelope', ...PARTS]) ||
    raw.mediaType !== BUNDLE_MEDIA_TYPE ||
    !parts.every(
      p => isObject(p) && sameKeys(p, ['entry', 'proof']) && Object.values(p).every(v => typeof v === 'string')
    )
  ) {
    throw new Failed('not a certificate bundle (keys or media type)');
  }
  s.bundle = raw as BundleState['bundle'];
  s.raw = raw.envelope;
  return STEP_FUNCTIONS[0][1](s);
}

const spoken = (part: Part): string => part.replace('_', ' ');

function proofOf(s: BundleState, part: Part): TlogProof {
  try {
    return parseProof(s.bundle![part].proof);
  } catch (error) {
    if (error instanceof TlogInvalid) {
      throw new Failed(`the ${spoken(part)}'s proof is not a C2SP tlog-proof`);
    }
    throw error;
  }
}

async function checkpoint(s: BundleState): Promise<string> {
  const notes = new Set(PARTS.map(part => proofOf(s, part).note));
  if (notes.size !== 1) {
    throw new Failed('the two proofs are against different checkpoints');
  }
  const [note] = notes;
  const [parsed, said] = await openCheckpoint(note, s.log, s.witnesses);
  s.checkpoint = parsed;
  return said;
}

/** The entry's fields and bytes, once its leaf is proven in the checkpoint. */
function entryOf(s: BundleState, part: Part): Promise<[JsonObject, Uint8Array]> {
  return provenLeaf(s.bundle![part].entry, proofOf(s, part), s.checkpoint!, spoken(part));
}

/** ``(specimen id, "sha256:<hex>")`` of the statement's subject (``specimen_of``). */
function specimenOf(statement: JsonObject): [string, string] {
  const subject = (statement.subject as JsonObject[])[0];
  const digest = isObject(subject.digest) ? subject.digest.sha256 : undefined;
  return [String(subject.name).slice(SUBJECT_PREFIX.length), 'sha256:' + String(digest)];
}

function ledgerOf(statement: JsonObject): JsonObject {
  const predicate = statement.predicate as JsonObject;
  return isObject(predicate.ledger) ? predicate.ledger : {};
}

async function subject(s: BundleState): Promise<string> {
  const [specimenId, digest] = specimenOf(s.statement);
  const [fields, data] = await entryOf(s, 'specimen_entry');
  const body = fields.body as JsonObject;
  if (fields.kind !== 'specimen.sealed' || fields.subject !== specimenId || body.specimen_id !== specimenId) {
    throw new Failed("the specimen entry is not this specimen's seal");
  }
  if (body.manifest_digest !== digest) {
    throw new Failed('subject digest differs from the sealed manifest digest');
  }
  const claimed = ledgerOf(s.statement);
  const entryHash = 'sha256:' + hex(await sha256(data));
  if (fields.index !== claimed.specimen_entry_index || entryHash !== claimed.specimen_entry_hash) {
    throw new Failed("predicate.ledger differs from the specimen's ledger position");
  }
  return `specimen entry ${fields.index} with matching manifest digest, proven`;
}

/** ``sha256:<hex>`` of the envelope's RFC 8785 form: what the ledger records. */
export async function envelopeDigest(envelope: unknown): Promise<string> {
  return 'sha256:' + hex(await sha256(new TextEncoder().encode(canonicalJson(envelope))));
}

async function ledgerEntry(s: BundleState): Promise<string> {
  const [fields] = await entryOf(s, 'certificate_entry');
  const body = fields.body as JsonObject;
  const [specimenId] = specimenOf(s.statement);
  if (fields.kind !== 'certificate.issued' || body.envelope_digest !== (await envelopeDigest(s.raw))) {
    throw new Failed('the certificate entry does not name this envelope');
  }
  if (body.specimen_id !== specimenId) {
    throw new Failed('the certificate entry names another specimen');
  }
  const specimenIndex = ledgerOf(s.statement).specimen_entry_index;
  if (!((fields.index as number) > (specimenIndex as number))) {
    throw new Failed('certificate entry precedes its specimen entry');
  }
  return `certificate.issued at entry ${fields.index}, proven`;
}

const BUNDLE_STEP_FUNCTIONS: ReadonlyArray<Step<BundleState>> = [
  ['envelope', bundleEnvelope],
  ...STEP_FUNCTIONS.slice(1, 4),
  ['checkpoint', checkpoint],
  ['subject', subject],
  ['ledger_entry', ledgerEntry]
];

/** Verify ``bundle`` (a parsed file, or anything else) with the trusted issuer key and
 * the trusted log key alone. */
export async function verifyBundle(
  bundle: unknown,
  issuer: TrustedKey,
  log: LogKey,
  witnesses: Witnesses = NO_WITNESSES
): Promise<VerifyReport> {
  return runSteps(new BundleState(bundle, issuer, log, witnesses), BUNDLE_STEP_FUNCTIONS);
}
