/**
 * Where the browser's trusted issuer key comes from: the user's settings — a PEM pasted
 * into ``trustedKeyPem``, or ``trustedKeyPath``, a ``.pub``/``.pem`` file in the Jupyter
 * root the user points to. Never from the certificate, never from the enclave service.
 * Likewise the trusted log key a bundle's checkpoint is checked with: ``trustedLogKey``,
 * a C2SP verifier key string; and the witnesses whose cosignatures every checkpoint must
 * carry: ``trustedWitnessKeys`` (C2SP cosigner keys) with ``witnessQuorum`` of them
 * required (0: all), as ``verify --witness KEY… --quorum K`` requires them.
 */

import { Contents } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { KeyError, loadTrustedKey, TrustedKey } from './verify/key';
import { NO_WITNESSES, Witnesses } from './verify/proven';
import { loadLogKey, loadWitnessKey, LogKey } from './verify/tlog';

export const PLUGIN_ID = 'replay-enclave:plugin';

export class TrustedKeySource {
  constructor(
    private readonly settings: ISettingRegistry.ISettings | null,
    private readonly contents: Contents.IManager
  ) {}

  get path(): string {
    return String(this.settings?.get('trustedKeyPath').composite ?? '');
  }

  async setPath(path: string): Promise<void> {
    if (this.settings === null) {
      throw new KeyError('settings are not available');
    }
    await this.settings.set('trustedKeyPath', path);
  }

  /** The configured key, or null when the user has not configured one. */
  async load(): Promise<TrustedKey | null> {
    const pem = String(this.settings?.get('trustedKeyPem').composite ?? '').trim();
    if (pem) {
      return loadTrustedKey(pem);
    }
    const path = this.path.trim();
    if (!path) {
      return null;
    }
    let model: Contents.IModel;
    try {
      model = await this.contents.get(path, { content: true, type: 'file', format: 'text' });
    } catch {
      throw new KeyError(`the trusted key file ${path} cannot be read`);
    }
    return loadTrustedKey(String(model.content));
  }

  /** The configured log key, or null when the user has not configured one. */
  async loadLogKey(): Promise<LogKey | null> {
    const vkey = String(this.settings?.get('trustedLogKey').composite ?? '').trim();
    return vkey ? loadLogKey(vkey) : null;
  }

  /** The witnesses every checkpoint must have been cosigned by (none configured: none). */
  async loadWitnesses(): Promise<Witnesses> {
    const configured = this.settings?.get('trustedWitnessKeys').composite;
    const vkeys = (Array.isArray(configured) ? configured : []).map(k => String(k).trim()).filter(k => k);
    if (vkeys.length === 0) {
      return NO_WITNESSES;
    }
    const keys = await Promise.all(vkeys.map(loadWitnessKey));
    const quorum = Number(this.settings?.get('witnessQuorum').composite ?? 0) || keys.length;
    if (!Number.isInteger(quorum) || quorum < 0 || quorum > keys.length) {
      throw new KeyError('the witness quorum is more than the witnesses configured');
    }
    return { keys, quorum };
  }
}
