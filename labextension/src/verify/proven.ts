/**
 * A proven ledger entry, as ``ledger.certificates._bundle`` checks one: its checkpoint
 * signed by the trusted log key (``openCheckpoint``), and its canonical bytes whose leaf
 * leads to that checkpoint's root (``provenLeaf``). Used by the certificate bundle's
 * steps and, whole, by the release report bundle (``provenEntry``). Failures throw
 * ``Failed`` with the Python verifier's sentences.
 */

import { canonicalJson } from './canonical';
import {
  Checkpoint,
  cosignedBy,
  decodeBase64,
  equalBytes,
  hashLeaf,
  LogKey,
  openNote,
  parseCheckpoint,
  parseProof,
  TlogInvalid,
  TlogProof,
  verifyInclusion,
  WitnessKey
} from './tlog';
import { Failed, isObject, JsonObject } from './verifier';

const ENTRY_KEYS = 'body,index,kind,prev_hash,recorded_at,subject';

/** The witnesses a verifier requires, as ``verify --witness KEY… --quorum K`` does:
 * ``quorum`` of ``keys`` must have cosigned every checkpoint (none: no requirement). */
export interface Witnesses {
  keys: WitnessKey[];
  quorum: number;
}

export const NO_WITNESSES: Witnesses = { keys: [], quorum: 0 };

/** The checkpoint in ``note`` once the log key's signature (and ``quorum`` of the
 * witnesses' cosignatures) verify on it, and what was checked (``_open_checkpoint``). */
export async function openCheckpoint(
  note: string,
  log: LogKey,
  witnesses: Witnesses = NO_WITNESSES
): Promise<[Checkpoint, string]> {
  let parsed: Checkpoint;
  try {
    parsed = parseCheckpoint(await openNote(note, log));
  } catch (error) {
    if (error instanceof TlogInvalid) {
      throw new Failed('the checkpoint is not signed by the log key');
    }
    throw error;
  }
  if (parsed.origin !== log.name) {
    throw new Failed("the checkpoint is another log's");
  }
  let witnessed = '';
  if (witnesses.quorum > 0) {
    let cosigners: WitnessKey[];
    try {
      cosigners = await cosignedBy(note, witnesses.keys);
    } catch (error) {
      if (error instanceof TlogInvalid) {
        throw new Failed("a witness's cosignature does not verify");
      }
      throw error;
    }
    if (cosigners.length < witnesses.quorum) {
      throw new Failed(`cosigned by ${cosigners.length} of the witnesses, ${witnesses.quorum} required`);
    }
    witnessed = `, cosigned by ${cosigners.length} of ${witnesses.keys.length} witnesses`;
  }
  return [parsed, `signed by ${parsed.origin} at ${parsed.size} entries${witnessed}`];
}

/** The fields and bytes of ``entry`` (base64 canonical bytes), once ``proof`` leads
 * from its leaf to ``checkpoint``'s root; ``name`` says which entry in a failure. */
export async function provenLeaf(
  entry: string,
  proof: TlogProof,
  checkpoint: Checkpoint,
  name: string
): Promise<[JsonObject, Uint8Array]> {
  const data = decodeBase64(entry);
  let fields: unknown;
  let canonical: boolean;
  try {
    if (data === null) {
      throw new TypeError('not base64');
    }
    fields = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
    canonical = equalBytes(new TextEncoder().encode(canonicalJson(fields)), data);
  } catch {
    throw new Failed(`the ${name} is not canonical JSON`);
  }
  if (!canonical || !isObject(fields) || Object.keys(fields).sort().join(',') !== ENTRY_KEYS) {
    throw new Failed(`the ${name} is not a canonical ledger entry`);
  }
  if (!isObject(fields.body) || !Number.isSafeInteger(fields.index)) {
    throw new Failed(`the ${name} is not a canonical ledger entry`);
  }
  if (proof.index !== BigInt(fields.index as number)) {
    throw new Failed(`the ${name}'s proof is for another index`);
  }
  try {
    await verifyInclusion(await hashLeaf(data!), proof.index, checkpoint.size, proof.hashes, checkpoint.root);
  } catch (error) {
    if (error instanceof TlogInvalid) {
      throw new Failed(`the ${name}'s proof does not lead to the checkpoint's root`);
    }
    throw error;
  }
  return [fields, data!];
}

/** ``proven_entry``: one ``{"entry", "proof"}`` part's fields once its checkpoint and
 * leaf verify, with what was checked; else ``null`` and the first thing that failed. */
export async function provenEntry(
  part: unknown,
  log: LogKey,
  witnesses: Witnesses = NO_WITNESSES
): Promise<[JsonObject | null, string]> {
  try {
    if (
      !isObject(part) ||
      Object.keys(part).sort().join(',') !== 'entry,proof' ||
      !Object.values(part).every(v => typeof v === 'string')
    ) {
      throw new Failed('not a proven entry (keys)');
    }
    let proof: TlogProof;
    try {
      proof = parseProof(part.proof);
    } catch (error) {
      if (error instanceof TlogInvalid) {
        throw new Failed("the entry's proof is not a C2SP tlog-proof");
      }
      throw error;
    }
    const [checkpoint, said] = await openCheckpoint(proof.note, log, witnesses);
    const [fields] = await provenLeaf(part.entry as string, proof, checkpoint, 'entry');
    return [fields, `entry ${fields.index} proven, ${said}`];
  } catch (error) {
    if (error instanceof Failed) {
      return [null, error.message];
    }
    throw error;
  }
}
