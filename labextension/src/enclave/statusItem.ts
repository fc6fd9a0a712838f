/** The status bar's running-audits item: the count, kept by the one tracker; a click
 * (or Enter) opens the sidebar. */

import { Widget } from '@lumino/widgets';

import { AuditTracker } from './audits';

export class RunningAuditsItem extends Widget {
  constructor(
    private readonly audits: AuditTracker,
    open: () => void
  ) {
    super({ node: document.createElement('button') });
    this.addClass('enclave-status-running');
    this.node.setAttribute('type', 'button');
    this.node.addEventListener('click', open);
    audits.changed.connect(() => this.render());
    this.render();
  }

  private render(): void {
    const n = this.audits.running;
    this.node.dataset.running = String(n);
    this.node.textContent = `Enclave: ${n} running`;
    this.node.setAttribute('aria-label', `${n} running audit${n === 1 ? '' : 's'}; open the Enclave sidebar`);
  }
}
