/**
 * The transparency-log math a certificate bundle is checked with, in the browser: the
 * port of ``ledger.certificates.tlog`` (``_merkle.verify_inclusion``, ``_proof.parse_proof``,
 * ``_note.open_note``/``parse_checkpoint``/``NoteVerifier.parse``) with WebCrypto.
 *
 * - RFC 9162 §2.1.3.2 inclusion: a leaf hash is SHA-256(0x00 ‖ entry), a node's
 *   SHA-256(0x01 ‖ left ‖ right).
 * - C2SP tlog-proof (c2sp.org/tlog-proof): ``c2sp.org/tlog-proof@v1``, an optional
 *   ``extra <base64>`` line, ``index <decimal>``, the audit path (canonical base64, a hash a
 *   line), a blank line, then the checkpoint's signed note verbatim.
 * - C2SP signed note (c2sp.org/signed-note): text ending in a newline, a blank line, one
 *   line per signature ``— <name> base64(key ID ‖ signature)``; the key ID of an Ed25519
 *   key is the first four bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key), a verifier
 *   key ``<name>+<key ID hex>+base64(0x01 ‖ public key)``.
 * - C2SP checkpoint (c2sp.org/tlog-checkpoint): origin, size and base64 root, a line each.
 * - C2SP cosignature (c2sp.org/tlog-cosignature, ``_cosignature.cosigned_by``): a witness's
 *   line ``— <name> base64(key ID ‖ timestamp ‖ signature)``, its key ID over type 0x04,
 *   the timestamp 8 bytes big-endian, the signature over ``cosignature/v1\ntime <t>\n``
 *   followed by the checkpoint's text.
 *
 * Errors are fixed sentences (``TlogInvalid``); the caller names the failing check.
 */

import { Bytes, encodeBase64 } from './base64';
import { hex, KeyError } from './key';

export const HASH_SIZE = 32;
const HEADER = 'c2sp.org/tlog-proof@v1';
const MAX_HASHES = 64;
const MAX_SIGNATURES = 100;
const DASH = '\u2014 ';
const ED25519 = 0x01;
const COSIGNATURE = 0x04;
const MAX_TIME = (1n << 63n) - 1n;

export class TlogInvalid extends Error {}

/** Base64 as Python's ``b64decode(text, validate=True)`` reads it: the standard alphabet,
 * at most two ``=`` at the end, whole quanta; or null. */
export function decodeBase64(text: string): Bytes | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    return null;
  }
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null;
  }
  return Uint8Array.from(binary, ch => ch.charCodeAt(0));
}

export function concat(...parts: Uint8Array[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

export async function sha256(data: Uint8Array): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', concat(data)));
}

export function hashLeaf(data: Uint8Array): Promise<Bytes> {
  return sha256(concat(Uint8Array.of(0), data));
}

export function hashChildren(left: Uint8Array, right: Uint8Array): Promise<Bytes> {
  return sha256(concat(Uint8Array.of(1), left, right));
}

/** RFC 9162 §2.1.3.2: ``leafHash`` is leaf ``index`` of the tree of ``size`` leaves whose
 * root is ``root``, or ``TlogInvalid``. */
export async function verifyInclusion(
  leafHash: Uint8Array,
  index: bigint,
  size: bigint,
  proof: readonly Uint8Array[],
  root: Uint8Array
): Promise<void> {
  if ([leafHash, root, ...proof].some(h => h.length !== HASH_SIZE)) {
    throw new TlogInvalid('a hash is 32 bytes');
  }
  if (!(index >= 0n && index < size)) {
    throw new TlogInvalid('the leaf index is not below the tree size');
  }
  let fn = index;
  let sn = size - 1n;
  let r: Uint8Array = leafHash;
  for (const p of proof) {
    if (sn === 0n) {
      throw new TlogInvalid('the proof is longer than the tree is deep');
    }
    if ((fn & 1n) === 1n || fn === sn) {
      r = await hashChildren(p, r);
      while (fn !== 0n && (fn & 1n) === 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = await hashChildren(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) {
    throw new TlogInvalid('the proof is shorter than the tree is deep');
  }
  if (!equalBytes(r, root)) {
    throw new TlogInvalid('the proof does not lead to the root');
  }
}

export interface TlogProof {
  index: bigint;
  hashes: Bytes[];
  /** The checkpoint's signed note, as given. */
  note: string;
}

function canonicalLine(text: string): Bytes {
  const data = decodeBase64(text);
  if (data === null) {
    throw new TlogInvalid('a tlog-proof line is not base64');
  }
  if (encodeBase64(data) !== text) {
    throw new TlogInvalid('a tlog-proof line is not canonical base64');
  }
  return data;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A C2SP tlog-proof from its text, or ``TlogInvalid`` (``_proof.parse_proof``). */
export function parseProof(text: unknown): TlogProof {
  if (typeof text !== 'string') {
    throw new TlogInvalid('a tlog-proof is text');
  }
  const at = text.indexOf('\n\n');
  const head = at < 0 ? text : text.slice(0, at);
  const note = at < 0 ? '' : text.slice(at + 2);
  const lines = head.split('\n');
  if (at < 0 || !note || lines[0] !== HEADER) {
    throw new TlogInvalid('not a c2sp.org/tlog-proof@v1 proof');
  }
  let position = 1;
  if (position < lines.length && lines[position].startsWith('extra ')) {
    canonicalLine(lines[position].slice('extra '.length));
    position += 1;
  }
  if (position >= lines.length || !lines[position].startsWith('index ')) {
    throw new TlogInvalid('a tlog-proof has an index line');
  }
  const digits = lines[position].slice('index '.length);
  if (!DECIMAL.test(digits)) {
    throw new TlogInvalid('a tlog-proof index is a decimal number');
  }
  const hashes = lines.slice(position + 1).map(canonicalLine);
  if (hashes.length > MAX_HASHES || hashes.some(h => h.length !== HASH_SIZE)) {
    throw new TlogInvalid('a tlog-proof has at most 64 hashes of 32 bytes');
  }
  return { index: BigInt(digits), hashes, note };
}

/** A trusted note signer: the log's name (its origin) and Ed25519 key. */
export interface LogKey {
  readonly name: string;
  readonly keyId: Bytes;
  readonly key: CryptoKey;
  /** The verifier key as configured, ``<name>+<key ID hex>+<base64>``. */
  readonly vkey: string;
}

function validName(name: string): boolean {
  // non-empty, no white space, no '+', printable (Python's str.isprintable)
  return name.length > 0 && !/[\s+]/u.test(name) && !/[\p{C}\p{Z}]/u.test(name);
}

export async function noteKeyId(name: string, raw: Uint8Array, type = ED25519): Promise<Bytes> {
  const digest = await sha256(concat(new TextEncoder().encode(name + '\n'), Uint8Array.of(type), raw));
  return digest.slice(0, 4);
}

/** A C2SP verifier key string, as ``NoteVerifier.parse`` reads it; ``KeyError`` if not. */
export function loadLogKey(vkey: string): Promise<LogKey> {
  return loadVerifierKey(vkey, ED25519, 'log key');
}

/** A trusted witness's cosigner key (``WitnessVerifier.parse``): the same form, type 0x04. */
export type WitnessKey = LogKey;

export function loadWitnessKey(vkey: string): Promise<WitnessKey> {
  return loadVerifierKey(vkey, COSIGNATURE, 'witness key');
}

async function loadVerifierKey(vkey: string, type: number, what: string): Promise<LogKey> {
  const text = vkey.trim();
  const first = text.indexOf('+');
  const name = first < 0 ? text : text.slice(0, first);
  const rest = first < 0 ? '' : text.slice(first + 1);
  const second = rest.indexOf('+');
  const keyHex = second < 0 ? rest : rest.slice(0, second);
  const material = second < 0 ? '' : rest.slice(second + 1);
  if (!validName(name)) {
    throw new KeyError(`the ${what} has no valid name (name+keyid+key)`);
  }
  const raw = decodeBase64(material);
  if (raw === null) {
    throw new KeyError(`the ${what} is not base64`);
  }
  if (raw.length !== 33 || raw[0] !== type) {
    throw new KeyError(`the ${what} is not an Ed25519 verifier key`);
  }
  let key: CryptoKey;
  try {
    key = await crypto.subtle.importKey('raw', raw.slice(1), { name: 'Ed25519' }, true, ['verify']);
  } catch {
    throw new KeyError(`the ${what} is not an Ed25519 verifier key`);
  }
  const keyId = await noteKeyId(name, raw.slice(1), type);
  if (keyHex !== hex(keyId)) {
    throw new KeyError(`the ${what}'s ID does not match its key`);
  }
  return { name, keyId, key, vkey: text };
}

function checkText(text: string): void {
  if (!text.endsWith('\n') || /[\x00-\x09\x0b-\x1f]/.test(text)) {
    throw new TlogInvalid("a note's text ends in a newline and holds no control character");
  }
}

function signatureLine(line: string): [string, Bytes] {
  if (!line.startsWith(DASH)) {
    throw new TlogInvalid('a signature line starts with an em dash');
  }
  const body = line.slice(DASH.length);
  const space = body.indexOf(' ');
  const name = space < 0 ? body : body.slice(0, space);
  const encoded = space < 0 ? '' : body.slice(space + 1);
  if (!validName(name)) {
    throw new TlogInvalid('a key name is non-empty, with no space and no +');
  }
  const signature = decodeBase64(encoded);
  if (signature === null) {
    throw new TlogInvalid('a signature is not base64');
  }
  if (space < 0 || signature.length < 5) {
    throw new TlogInvalid('a signature line is malformed');
  }
  return [name, signature];
}

/** The text of ``note`` once the log key's signature on it verifies (``open_note`` with
 * one trusted key): signatures by other keys are ignored; a failing one by the log key,
 * or none by it at all, rejects the note. */
export async function openNote(note: string, log: LogKey): Promise<string> {
  const at = note.lastIndexOf('\n\n');
  if (at < 0) {
    throw new TlogInvalid('not a signed note');
  }
  const signatures = note.slice(at + 2);
  if (!signatures.endsWith('\n')) {
    throw new TlogInvalid('not a signed note');
  }
  const text = note.slice(0, at) + '\n';
  checkText(text);
  const lines = signatures.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) {
    throw new TlogInvalid('too many signatures');
  }
  const message = new TextEncoder().encode(text);
  let verified = false;
  for (const line of lines) {
    const [name, signature] = signatureLine(line);
    if (name !== log.name || !equalBytes(signature.slice(0, 4), log.keyId)) {
      continue;
    }
    let valid = false;
    try {
      valid = await crypto.subtle.verify({ name: 'Ed25519' }, log.key, signature.slice(4), message);
    } catch {
      valid = false;
    }
    if (!valid) {
      throw new TlogInvalid(`the signature of ${name} does not verify`);
    }
    verified = true;
  }
  if (!verified) {
    throw new TlogInvalid('no trusted key signed the note');
  }
  return text;
}

/** The trusted witnesses whose cosignatures on ``note`` verify (``cosigned_by``); one by
 * a trusted key that fails rejects the note, as a failed signature does. */
export async function cosignedBy(note: string, witnesses: WitnessKey[]): Promise<WitnessKey[]> {
  const at = note.lastIndexOf('\n\n');
  const signatures = at < 0 ? '' : note.slice(at + 2);
  if (at < 0 || !signatures.endsWith('\n')) {
    throw new TlogInvalid('not a signed note');
  }
  const text = new TextEncoder().encode(note.slice(0, at) + '\n');
  const found: WitnessKey[] = [];
  for (const line of signatures.slice(0, -1).split('\n')) {
    const [name, blob] = signatureLine(line);
    const witness = witnesses.find(w => w.name === name && equalBytes(w.keyId, blob.slice(0, 4)));
    if (witness === undefined) {
      continue;
    }
    if (blob.length !== 4 + 8 + 64) {
      throw new TlogInvalid(`the cosignature of ${name} is malformed`);
    }
    const timestamp = new DataView(blob.buffer, blob.byteOffset + 4, 8).getBigUint64(0);
    const message = concat(new TextEncoder().encode(`cosignature/v1\ntime ${timestamp}\n`), text);
    let valid = false;
    try {
      valid = timestamp <= MAX_TIME && (await crypto.subtle.verify({ name: 'Ed25519' }, witness.key, blob.slice(12), message));
    } catch {
      valid = false;
    }
    if (!valid) {
      throw new TlogInvalid(`the cosignature of ${name} does not verify`);
    }
    if (!found.includes(witness)) {
      found.push(witness);
    }
  }
  return found;
}

export interface Checkpoint {
  origin: string;
  size: bigint;
  root: Bytes;
}

/** A checkpoint body (as ``openNote`` returns it); extension lines are ignored. */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '') {
    throw new TlogInvalid('a checkpoint has an origin, a size and a root, a line each');
  }
  const [origin, size, root] = lines;
  if (!origin || !DECIMAL.test(size)) {
    throw new TlogInvalid("a checkpoint's size is a decimal number");
  }
  const digest = decodeBase64(root);
  if (digest === null) {
    throw new TlogInvalid("a checkpoint's root is not base64");
  }
  if (digest.length !== HASH_SIZE) {
    throw new TlogInvalid("a checkpoint's root is 32 bytes");
  }
  return { origin, size: BigInt(size), root: digest };
}
