/**
 * The request form's widgets: specimen → call → active policy → parameters → start from
 * cut → purpose. The specimen's recorded cuts and sealed auditability come from its
 * detail (metadata only: a cut's name and call id, never its state).
 * Every submission is checked by ``buildBody`` (the service's rules) first; what the
 * service still refuses is shown with its code and message, as the service wrote them.
 */

import { Widget } from '@lumino/widgets';

import { el } from '../certificate/dom';
import { AuditStatus, call, EnclaveRefusal } from './api';
import { buildBody, Call, callOptions, Cut, cutOptions, Policy, policyOptions, prefill, REVISION, SpecimenDetail } from './request';

type Field = HTMLInputElement | HTMLSelectElement;

function labelled(id: string, text: string, control: Field, hint = ''): HTMLElement {
  control.id = id;
  const row = el('div', { class: 'enclave-sb-row' }, el('label', { for: id }, text), control);
  if (hint) {
    const hintId = `${id}-hint`;
    row.append(el('span', { class: 'enclave-sb-hint', id: hintId }, hint));
    control.setAttribute('aria-describedby', hintId);
  }
  return row;
}

let formCount = 0;

export class RequestForm extends Widget {
  readonly specimen = el('select', { class: 'enclave-sb-specimen' });
  readonly call = el('select', { class: 'enclave-sb-call' });
  readonly policy = el('select', { class: 'enclave-sb-policy' });
  readonly value = el('input', { class: 'enclave-sb-value', type: 'text', placeholder: 'JSON, e.g. 0.56' });
  readonly delta = el('input', { class: 'enclave-sb-delta', type: 'text', inputmode: 'decimal', placeholder: 'e.g. -0.05' });
  readonly revision = el('input', { class: 'enclave-sb-revision', type: 'text', placeholder: 'model=r2' });
  readonly samples = el('input', { class: 'enclave-sb-samples', type: 'text', inputmode: 'numeric', value: '20' });
  readonly seed = el('input', { class: 'enclave-sb-seed', type: 'text', inputmode: 'numeric', value: '1' });
  readonly tolerances = el('input', { class: 'enclave-sb-tolerances', type: 'text', placeholder: 'score=0.001' });
  readonly fromCut = el('select', { class: 'enclave-sb-from-cut' });
  readonly perSample = el('input', { class: 'enclave-sb-per-sample', type: 'checkbox' });
  readonly sealed = el('p', { class: 'enclave-sb-sealed', 'aria-live': 'polite' });
  readonly purpose = el('input', { class: 'enclave-sb-purpose', type: 'text', placeholder: 'why (recorded in the ledger)', required: '', 'aria-required': 'true' });
  readonly submit = el('button', { class: 'jp-Button jp-mod-styled jp-mod-accept enclave-sb-submit', type: 'submit' }, 'Request audit');
  readonly message = el('div', { class: 'enclave-sb-form-message', role: 'status', 'aria-live': 'polite' });
  private calls: Call[] = [];
  private cuts: Cut[] = [];
  private policies: Policy[] = [];
  private policyChoices: Array<Policy | typeof REVISION> = [];
  private specimenRequests = 0;

  constructor(private readonly onRequested: (status: AuditStatus) => void) {
    super();
    this.addClass('enclave-sb-form');
    const n = ++formCount;
    const id = (name: string): string => `enclave-sb-${name}-${n}`;
    const form = el(
      'form',
      { 'aria-label': 'New audit request', novalidate: '' },
      el('h3', {}, 'New audit request'),
      labelled(id('specimen'), 'Specimen', this.specimen),
      labelled(id('call'), 'Call', this.call),
      labelled(id('policy'), 'Active policy', this.policy),
      labelled(id('value'), 'Value (replace)', this.value),
      labelled(id('delta'), 'Delta (perturb)', this.delta),
      labelled(id('revision'), 'Revision', this.revision, 'NAME=IDENTITY'),
      labelled(id('samples'), 'Samples', this.samples, '2 to 100000'),
      labelled(id('seed'), 'Seed', this.seed),
      labelled(id('tolerances'), 'Tolerances', this.tolerances, 'LAYER=VALUE, …'),
      labelled(id('from-cut'), 'Start from cut', this.fromCut, 'none: full replay'),
      labelled(id('per-sample'), 'Every count', this.perSample, 'per-sample detail: where the policy grants it; a larger bound'),
      this.sealed,
      labelled(id('purpose'), 'Purpose (required)', this.purpose, 'visible text; recorded'),
      el('div', { class: 'enclave-sb-actions' }, this.submit),
      this.message
    );
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.send();
    });
    this.fromCut.append(...cutOptions([]).map(c => el('option', { value: c.value }, c.label)));
    this.specimen.addEventListener('change', () => void this.specimenChanged());
    this.call.addEventListener('change', () => this.callChanged());
    this.policy.addEventListener('change', () => this.policyChanged());
    this.node.append(form);
  }

  focusFirst(): void {
    this.specimen.focus();
  }

  setSpecimens(ids: readonly string[]): void {
    const current = this.specimen.value;
    this.specimen.replaceChildren(el('option', { value: '' }, '— choose —'), ...ids.map(sid => el('option', { value: sid }, sid)));
    if (ids.includes(current)) {
      this.specimen.value = current;
    }
  }

  async loadPolicies(): Promise<void> {
    try {
      this.policies = (await call<{ items: Policy[] }>('GET', 'policies', { query: { status: 'active' } })).items;
    } catch (error) {
      this.showRefusal(error);
      this.policies = [];
    }
    this.callChanged();
  }

  private async specimenChanged(): Promise<void> {
    const asked = ++this.specimenRequests;
    const previousCall = this.call.value;
    const previousCut = this.fromCut.value;
    let calls: Call[] = [];
    let cuts: Cut[] = [];
    let sealed: string | null = null;
    this.clear();
    if (this.specimen.value) {
      try {
        const detail = await call<SpecimenDetail>('GET', `specimens/${encodeURIComponent(this.specimen.value)}`);
        calls = detail.calls ?? [];
        cuts = detail.cuts ?? [];
        sealed = detail.sealed_auditability ?? null;
      } catch (error) {
        if (asked === this.specimenRequests) {
          this.showRefusal(error); // e.g. a viewer may list the specimen but not open it
        }
      }
    }
    if (asked !== this.specimenRequests) {
      return; // a later choice's answer wins
    }
    this.calls = calls;
    this.cuts = cuts;
    this.fromCut.replaceChildren(...cutOptions(cuts).map(c => el('option', { value: c.value }, c.label)));
    this.fromCut.value = cuts.some(c => c.name === previousCut) ? previousCut : '';
    this.sealed.textContent = sealed === null ? '' : `Sealed: ${sealed}`;
    this.sealed.dataset.auditability = sealed ?? '';
    this.call.replaceChildren(...callOptions(calls).map(c => el('option', { value: c.value }, c.label)));
    if (calls.some(c => c.call_id === previousCall)) {
      this.call.value = previousCall;
    }
    this.callChanged();
  }

  private callChanged(): void {
    const chosen = this.calls.find(c => c.call_id === this.call.value) ?? null;
    const options = policyOptions(this.policies, chosen);
    this.policyChoices = options.map(o => o.value);
    this.policy.replaceChildren(...options.map((o, i) => el('option', { value: String(i) }, o.label)));
    this.policyChanged();
  }

  private chosenPolicy(): Policy | typeof REVISION | null {
    return this.policyChoices[Number(this.policy.value)] ?? null;
  }

  private policyChanged(): void {
    const policy = this.chosenPolicy();
    if (policy !== null && policy !== REVISION) {
      for (const [name, value] of Object.entries(prefill(policy))) {
        (this[name as 'value' | 'delta' | 'revision'] as HTMLInputElement).value = value;
      }
    }
  }

  private clear(): void {
    this.message.replaceChildren();
    for (const input of [this.specimen, this.call, this.policy, this.value, this.delta, this.revision, this.samples, this.seed, this.tolerances, this.fromCut, this.perSample, this.purpose]) {
      input.removeAttribute('aria-invalid');
    }
  }

  private refuse(status: number, code: string, message: string, field?: string): void {
    this.message.replaceChildren(
      el('div', { class: 'enclave-sb-error', role: 'alert', 'data-status': String(status), 'data-code': code }, `${message} (${code})`)
    );
    const names: Record<string, string> = { specimen_id: 'specimen', call_id: 'call', from_cut: 'fromCut', detail: 'perSample' };
    const input = field ? (this as unknown as Record<string, unknown>)[names[field] ?? field] : null;
    if (input instanceof HTMLElement) {
      input.setAttribute('aria-invalid', 'true');
    }
  }

  private showRefusal(error: unknown): void {
    if (!(error instanceof EnclaveRefusal)) {
      throw error;
    }
    this.refuse(error.status, error.code, error.message);
  }

  async send(): Promise<void> {
    this.clear();
    const built = buildBody({
      specimenId: this.specimen.value,
      callId: this.call.value || null,
      policy: this.chosenPolicy(),
      value: this.value.value,
      delta: this.delta.value,
      revision: this.revision.value,
      samples: this.samples.value,
      seed: this.seed.value,
      tolerances: this.tolerances.value,
      purpose: this.purpose.value,
      fromCut: this.fromCut.value,
      perSample: this.perSample.checked
    }, { calls: this.calls, cuts: this.cuts });
    if ('refusal' in built) {
      const r = built.refusal;
      this.refuse(r.status, r.code, r.message, r.field);
      this.message.firstElementChild?.setAttribute('data-side', 'browser');
      return;
    }
    this.submit.disabled = true;
    try {
      const status = await call<AuditStatus>('POST', 'audits', { body: built.body });
      this.message.replaceChildren(
        el('div', { class: 'enclave-sb-requested', 'data-audit-id': status.audit_id }, `Requested ${status.audit_id} (${status.status}).`)
      );
      this.onRequested(status);
    } catch (error) {
      this.showRefusal(error);
      this.message.firstElementChild?.setAttribute('data-side', 'service');
    } finally {
      this.submit.disabled = false;
    }
  }
}
