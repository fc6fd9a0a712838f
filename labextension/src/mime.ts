/** The MIME renderer for ``application/vnd.replay-enclave.certificate+json`` outputs: the
 * output's data is the certificate envelope itself, so it gets the document viewer's view
 * and the same Verify (the browser's and the server's verification side by side, with
 * the trusted key from the user's settings, shared by the main plugin). */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { el } from './certificate/dom';
import { UnreadableCertificate } from './certificate/model';
import { MIME_TYPE } from './constants';
import { bothPass, sharedTrustedKeys, verifyBoth } from './verify/both';
import { renderResults } from './verify/results';
import { renderEnvelope, VERIFY_LABEL } from './viewer/dispatch';

const UNVERIFIED = 'Not verified: the content below is what the output says, unchecked.';

class CertificateOutput extends Widget implements IRenderMime.IRenderer {
  private text = '';
  private readonly results = el('div', { class: 'enclave-verification-slot' });
  private readonly button = el(
    'button',
    { class: 'jp-Button jp-mod-styled jp-mod-accept enclave-verify-button', type: 'button' },
    'Verify certificate'
  );
  private readonly status = el(
    'p',
    { class: 'enclave-verify-status', 'data-state': 'unverified', role: 'status' },
    UNVERIFIED
  );

  constructor() {
    super();
    this.addClass('enclave-certificate-viewer');
    this.addClass('enclave-certificate-output');
    this.button.addEventListener('click', () => void this.verify());
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const envelope = model.data[MIME_TYPE];
    this.text = JSON.stringify(envelope);
    this.results.replaceChildren();
    this.setStatus('unverified', UNVERIFIED);
    try {
      const rendered = renderEnvelope(envelope);
      this.button.textContent = VERIFY_LABEL[rendered.kind];
      this.node.replaceChildren(el('div', { class: 'enclave-verify-bar' }, this.button, this.status), this.results, rendered.node);
    } catch (error) {
      if (!(error instanceof UnreadableCertificate)) {
        throw error;
      }
      this.node.replaceChildren(el('p', { class: 'enclave-unreadable', role: 'alert' }, error.message));
    }
  }

  private setStatus(state: string, message: string): void {
    this.status.dataset.state = state;
    this.status.textContent = message;
  }

  /** Run both verifications on the output's envelope and show them side by side. */
  async verify(): Promise<void> {
    this.button.disabled = true;
    this.setStatus('running', 'Verifying in the browser and on the server…');
    try {
      const outcomes = await verifyBoth(this.text, sharedTrustedKeys());
      this.results.replaceChildren(renderResults(...outcomes));
      const ok = bothPass(outcomes);
      this.setStatus(ok ? 'verified' : 'failed', ok ? 'Verified.' : 'Verification failed: see the checks below.');
    } finally {
      this.button.disabled = false;
    }
  }
}

const extension: IRenderMime.IExtension = {
  id: 'replay-enclave:certificate-renderer',
  description: 'Renders Replay Enclave certificates in notebook outputs, with Verify.',
  rendererFactory: {
    safe: true,
    mimeTypes: [MIME_TYPE],
    createRenderer: () => new CertificateOutput()
  },
  rank: 0,
  dataType: 'json'
};

export default extension;
