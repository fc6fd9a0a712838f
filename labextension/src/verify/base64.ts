/**
 * Canonical base64 as the DSSE envelope check reads it (jupyter_ext/_offline.py `_b64`):
 * the standard or the URL-safe alphabet, padded or not, and the text must be exactly what
 * re-encoding the decoded bytes gives — so one byte string has one accepted spelling.
 */

/** Bytes in an ordinary ArrayBuffer, as WebCrypto takes them. */
export type Bytes = Uint8Array<ArrayBuffer>;

const STANDARD = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeStandard(text: string): Bytes | null {
  if (text.length % 4 !== 0 || !STANDARD.test(text)) {
    return null;
  }
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null; // atob's only failure is malformed input, the caller reports it
  }
  return Uint8Array.from(binary, ch => ch.charCodeAt(0));
}

export function encodeBase64(data: Uint8Array, urlSafe = false): string {
  let binary = '';
  for (const byte of data) {
    binary += String.fromCharCode(byte);
  }
  const text = btoa(binary);
  return urlSafe ? text.replace(/\+/g, '-').replace(/\//g, '_') : text;
}

/** The decoded bytes, or null when ``text`` is not a canonical base64 spelling. */
export function decodeCanonicalBase64(text: unknown): Bytes | null {
  if (typeof text !== 'string' || !/^[\x00-\x7f]*$/.test(text)) {
    return null;
  }
  for (const urlSafe of [false, true]) {
    const padded: string = text.includes('=') ? text : text + '='.repeat((4 - (text.length % 4)) % 4);
    const standard = urlSafe ? padded.replace(/-/g, '+').replace(/_/g, '/') : padded;
    const data = decodeStandard(standard);
    if (data === null) {
      continue;
    }
    const again = encodeBase64(data, urlSafe);
    if (again === text || again === padded || again.replace(/=+$/, '') === text) {
      return data;
    }
  }
  return null;
}
