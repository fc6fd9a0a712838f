/**
 * Both verifications of one envelope's text, side by side: the browser's (WebCrypto,
 * with the user's trusted key) and the server extension's (``POST /enclave/verify``,
 * with the key configured on the Jupyter server). Used by the certificate document and
 * by the notebook output renderer.
 */

import { TrustedKeySource } from '../trustedKey';
import { KeyError } from './key';
import { allPass, Outcome } from './results';
import { ServerVerifyError, verifyOnServer } from './server';
import { parseEnvelopeText, verifyEnvelope } from './verifier';
import { isBundle, verifyBundle } from './bundle';
import { isReportBundle, verifyReportBundle } from './reportBundle';

let sharedKeys: TrustedKeySource | null = null;

/** The main plugin hands its key source to renderers that cannot ask for it. */
export function shareTrustedKeys(keys: TrustedKeySource): void {
  sharedKeys = keys;
}

export function sharedTrustedKeys(): TrustedKeySource | null {
  return sharedKeys;
}

async function inBrowser(text: string, keys: TrustedKeySource | null): Promise<Outcome> {
  try {
    const key = keys === null ? null : await keys.load();
    if (key === null) {
      return { error: 'no trusted issuer key is configured (Settings → Replay Enclave)' };
    }
    const document = parseEnvelopeText(text);
    if (isBundle(document) || isReportBundle(document)) {
      const log = await keys!.loadLogKey();
      if (log === null) {
        return { error: 'no trusted log key is configured (Settings → Replay Enclave)' };
      }
      const verify = isBundle(document) ? verifyBundle : verifyReportBundle;
      return { report: await verify(document, key, log, await keys!.loadWitnesses()) };
    }
    return { report: await verifyEnvelope(document, key) };
  } catch (error) {
    if (error instanceof KeyError) {
      return { error: error.message };
    }
    throw error;
  }
}

async function onServer(text: string): Promise<Outcome> {
  try {
    return await verifyOnServer(text); // a bundle (either kind), with no log key there: skipped
  } catch (error) {
    if (error instanceof ServerVerifyError) {
      return { error: error.message };
    }
    throw error;
  }
}

/** ``[browser, server]`` outcomes for the envelope (or bundle) ``text``. */
export async function verifyBoth(text: string, keys: TrustedKeySource | null): Promise<[Outcome, Outcome]> {
  return Promise.all([inBrowser(text, keys), onServer(text)]);
}

export function bothPass(outcomes: [Outcome, Outcome]): boolean {
  return allPass(outcomes);
}
