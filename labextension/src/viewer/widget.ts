/**
 * The certificate document: the rendered certificate (or release report), marked
 * unverified, with a Verify button that runs the browser's and the server's
 * verification side by side.
 */

import { DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { Widget } from '@lumino/widgets';

import { el } from '../certificate/dom';
import { UnreadableCertificate } from '../certificate/model';
import { TrustedKeySource } from '../trustedKey';
import { bothPass, verifyBoth } from '../verify/both';
import { renderResults } from '../verify/results';
import { parseEnvelopeText } from '../verify/verifier';
import { renderEnvelope, VERIFY_LABEL } from './dispatch';

export class CertificateView extends Widget {
  private readonly body = el('div', { class: 'enclave-certificate-body' });
  private readonly results = el('div', { class: 'enclave-verification-slot' });
  private readonly button = el(
    'button',
    { class: 'jp-Button jp-mod-styled jp-mod-accept enclave-verify-button', type: 'button' },
    'Verify certificate'
  );
  private readonly status = el(
    'p',
    { class: 'enclave-verify-status', 'data-state': 'unverified', role: 'status' },
    'Not verified: the content below is what the file says, unchecked.'
  );

  constructor(
    private readonly context: DocumentRegistry.Context,
    private readonly keys: TrustedKeySource
  ) {
    super();
    this.addClass('enclave-certificate-viewer');
    this.node.tabIndex = -1;
    this.button.addEventListener('click', () => void this.verify());
    this.node.append(
      el('div', { class: 'enclave-verify-bar' }, this.button, this.status),
      this.results,
      this.body
    );
    void context.ready.then(() => {
      this.renderFile();
      context.model.contentChanged.connect(() => this.renderFile());
    });
  }

  get path(): string {
    return this.context.path;
  }

  private text(): string {
    return this.context.model.toString();
  }

  private renderFile(): void {
    this.results.replaceChildren();
    this.setStatus('unverified', 'Not verified: the content below is what the file says, unchecked.');
    try {
      const rendered = renderEnvelope(parseEnvelopeText(this.text()));
      this.body.replaceChildren(rendered.node);
      this.button.textContent = VERIFY_LABEL[rendered.kind];
      this.node.dataset.kind = rendered.kind;
    } catch (error) {
      if (!(error instanceof UnreadableCertificate)) {
        throw error;
      }
      this.body.replaceChildren(el('p', { class: 'enclave-unreadable', role: 'alert' }, error.message));
    }
  }

  private setStatus(state: string, message: string): void {
    this.status.dataset.state = state;
    this.status.textContent = message;
  }

  /** Run both verifications on the file's current bytes and show them side by side. */
  async verify(): Promise<void> {
    await this.context.ready;
    const text = this.text();
    this.button.disabled = true;
    this.setStatus('running', 'Verifying in the browser and on the server…');
    try {
      const outcomes = await verifyBoth(text, this.keys);
      this.results.replaceChildren(renderResults(...outcomes));
      const ok = bothPass(outcomes);
      this.setStatus(ok ? 'verified' : 'failed', ok ? 'Verified.' : 'Verification failed: see the checks below.');
    } finally {
      this.button.disabled = false;
    }
  }
}

export class CertificateDocument extends DocumentWidget<CertificateView> {}
