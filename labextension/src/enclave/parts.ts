/** Pieces every sidebar section uses: a titled section and a refusal's one-line alert. */

import { el } from '../certificate/dom';
import { EnclaveRefusal } from './api';

export function errorLine(error: unknown): HTMLElement {
  if (!(error instanceof EnclaveRefusal)) {
    throw error;
  }
  return el('div', { class: 'enclave-sb-error', role: 'alert', 'data-status': String(error.status), 'data-code': error.code }, `${error.message} (${error.code})`);
}

export function section(title: string, cls: string, ...children: HTMLElement[]): HTMLElement {
  const id = `${cls}-title`;
  return el('section', { class: `enclave-sb-section ${cls}`, 'aria-labelledby': id }, el('h3', { id }, title), ...children);
}
