/**
 * The trusted issuer key: an Ed25519 public key in PEM (SubjectPublicKeyInfo), given by
 * the reviewer — never taken from the certificate or from the server that sent it.
 */

import { decodeCanonicalBase64 } from './base64';

export interface TrustedKey {
  readonly key: CryptoKey;
  /** ``sha256:<hex>`` of the raw 32-byte key, as ``predicate.issuer`` names it. */
  readonly keyid: string;
}

export class KeyError extends Error {}

const PEM = /^-----BEGIN PUBLIC KEY-----\s+([A-Za-z0-9+/=\s]+?)\s*-----END PUBLIC KEY-----\s*$/;

export function hex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(new Uint8Array(bytes), b => b.toString(16).padStart(2, '0')).join('');
}

export async function loadTrustedKey(pem: string): Promise<TrustedKey> {
  const match = PEM.exec(pem.trim());
  const der = match ? decodeCanonicalBase64(match[1].replace(/\s+/g, '')) : null;
  if (der === null) {
    throw new KeyError('not a PEM public key');
  }
  let key: CryptoKey;
  try {
    key = await crypto.subtle.importKey('spki', der, { name: 'Ed25519' }, true, ['verify']);
  } catch {
    // WebCrypto says only "DataError"; what matters to the reviewer is the key's kind
    throw new KeyError('the issuer key is not Ed25519');
  }
  const raw = await crypto.subtle.exportKey('raw', key);
  const digest = await crypto.subtle.digest('SHA-256', raw);
  return { key, keyid: 'sha256:' + hex(digest) };
}
