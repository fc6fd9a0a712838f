/** The MIME renderer for ``application/vnd.replay-enclave.certificate+json`` outputs:
 * the same view as the document viewer (display only; verification needs the file). */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { el } from './certificate/dom';
import { readCertificate, UnreadableCertificate } from './certificate/model';
import { renderCertificate } from './certificate/view';
import { MIME_TYPE } from './constants';

class CertificateOutput extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('enclave-certificate-viewer');
    this.addClass('enclave-certificate-output');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    try {
      this.node.replaceChildren(
        el('p', { class: 'enclave-verify-status', 'data-state': 'unverified' }, 'Not verified: open the .dsse.json file and press Verify.'),
        renderCertificate(readCertificate(model.data[MIME_TYPE]))
      );
    } catch (error) {
      if (!(error instanceof UnreadableCertificate)) {
        throw error;
      }
      this.node.replaceChildren(el('p', { class: 'enclave-unreadable', role: 'alert' }, error.message));
    }
  }
}

const extension: IRenderMime.IExtension = {
  id: 'replay-enclave:certificate-renderer',
  description: 'Renders Replay Enclave certificates in notebook outputs.',
  rendererFactory: {
    safe: true,
    mimeTypes: [MIME_TYPE],
    createRenderer: () => new CertificateOutput()
  },
  rank: 0,
  dataType: 'json'
};

export default extension;
