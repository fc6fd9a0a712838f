/** The document widget factory and file types for ``*.dsse.json`` certificates and
 * ``*.bundle.json`` certificate bundles (shown by their envelope). */

import { ABCWidgetFactory, DocumentRegistry } from '@jupyterlab/docregistry';

import { BUNDLE_FILE_TYPE, FACTORY, FILE_TYPE, MIME_TYPE } from '../constants';
import { TrustedKeySource } from '../trustedKey';
import { CertificateDocument, CertificateView } from './widget';

export { BUNDLE_FILE_TYPE, FACTORY, FILE_TYPE, MIME_TYPE };

export const CERTIFICATE_FILE_TYPE: Partial<DocumentRegistry.IFileType> = {
  name: FILE_TYPE,
  displayName: 'Replay Enclave certificate',
  pattern: '.*\\.dsse\\.json$',
  extensions: ['.dsse.json'],
  mimeTypes: [MIME_TYPE],
  contentType: 'file',
  fileFormat: 'text',
  iconClass: 'jp-MaterialIcon jp-JSONIcon'
};

export const BUNDLE_FILE_TYPE_SPEC: Partial<DocumentRegistry.IFileType> = {
  name: BUNDLE_FILE_TYPE,
  displayName: 'Replay Enclave certificate bundle',
  pattern: '.*\\.bundle\\.json$',
  extensions: ['.bundle.json'],
  mimeTypes: ['application/json'],
  contentType: 'file',
  fileFormat: 'text',
  iconClass: 'jp-MaterialIcon jp-JSONIcon'
};

export class CertificateFactory extends ABCWidgetFactory<CertificateDocument> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<CertificateDocument>,
    private readonly keys: TrustedKeySource
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): CertificateDocument {
    const content = new CertificateView(context, this.keys);
    const widget = new CertificateDocument({ content, context });
    widget.title.caption = `Certificate ${context.path}`;
    return widget;
  }
}
