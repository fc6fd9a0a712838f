/**
 * The request form's rules, mirrored from the service: each attacker input is refused
 * in the browser with the status and code the service answers with (its cases are
 * ``tests/test_service_hardening.py``: no coercion, visible purpose, a delta that
 * changes nothing), and the bodies the form builds for the panel's audits are accepted.
 */

import { describe, expect, it } from 'vitest';

import { buildBody, cutOptions, FormInput, Policy, policyOptions, prefill, REVISION, SpecimenDetail } from '../src/enclave/request';
import { checkAuditBody, isPointer, MAX_SEED, MESSAGES } from '../src/enclave/validate';

const revisionBody = {
  specimen_id: 'sp-1',
  strategy: 'revision',
  revision: 'model=r2',
  samples: 30,
  seed: 1,
  purpose: 'Dispute review of PO-2291 on revision r2'
};
const perturbBody = {
  specimen_id: 'sp-1',
  strategy: 'perturb',
  call_id: 'main/decider#0',
  field: '/confidence',
  delta: -0.05,
  samples: 20,
  seed: 1,
  purpose: 'sensitivity'
};

function code(body: unknown): [number, string] | null {
  const refusal = checkAuditBody(body);
  return refusal === null ? null : [refusal.status, refusal.code];
}

describe('the service accepts', () => {
  it('a declared revision swap and a perturbation', () => {
    expect(code(revisionBody)).toBeNull();
    expect(code(perturbBody)).toBeNull();
    expect(code({ ...perturbBody, strategy: 'replace', delta: undefined, value: null })).toBeNull();
    expect(code({ ...revisionBody, seed: MAX_SEED, tolerances: { score: 0.001, readback: 'ignore' } })).toBeNull();
  });
});

describe('a purpose must be visible text (422 invalid_request)', () => {
  it.each([
    ['zero-width space', '\u200b'],
    ['NUL', '\x00'],
    ['NUL inside', 'review\x00'],
    ['spaces only', '   '],
    ['word joiner', '\u2060\u200b'],
    ['right-to-left override', 'a\u202eb'],
    ['line break', 'line\nbreak'],
    ['tab', '\t'],
    ['lone surrogate', 'a\ud800'],
    ['too long', 'x'.repeat(501)],
    ['not text', 5]
  ])('%s', (_, purpose) => {
    expect(code({ ...revisionBody, purpose })).toEqual([422, 'invalid_request']);
  });

  it('500 characters counted as the service counts them (code points)', () => {
    expect(code({ ...revisionBody, purpose: '😀'.repeat(500) })).toBeNull();
    expect(code({ ...revisionBody, purpose: '😀'.repeat(501) })).toEqual([422, 'invalid_request']);
  });
});

describe('nothing is coerced', () => {
  it.each([
    [{ seed: '1' }],
    [{ samples: '4' }],
    [{ seed: 1.5 }],
    [{ samples: true }],
    [{ specimen_id: 7 }],
    [{ policy_id: 3 }],
    [{ seed: -1 }],
    [{ seed: MAX_SEED + 1 }],
    [{ samples: 1 }],
    [{ tolerances: { score: true } }],
    [{ unknown_key: 1 }]
  ])('%j is 422 invalid_request', changes => {
    expect(code({ ...revisionBody, ...changes })).toEqual([422, 'invalid_request']);
  });

  it.each([[true], ['0.1'], [null], [0], [2e6], [Infinity], [NaN]])('delta %j is 400 bad_input', delta => {
    expect(code({ ...perturbBody, delta })).toEqual([400, 'bad_input']);
  });

  it.each([['REVISION'], ['swap'], [1]])('strategy %j is 400 bad_input', strategy => {
    expect(code({ ...revisionBody, strategy })).toEqual([400, 'bad_input']);
  });

  it('a parameter the strategy does not take is 400 bad_input, before the shape', () => {
    expect(code({ ...revisionBody, delta: 0.1, seed: '1' })).toEqual([400, 'bad_input']);
    expect(checkAuditBody({ ...revisionBody, delta: 0.1 })?.message).toBe('that strategy takes no delta');
  });

  it.each([['model'], ['=r2'], ['model='], ['m\u200b=r2']])('revision %j is 400 bad_input', revision => {
    expect(code({ ...revisionBody, revision })).toEqual([400, 'bad_input']);
  });

  it.each([['confidence'], ['/'], ['//a'], ['/a~2'], ['/a~']])('field %j is 400 bad_input', field => {
    expect(code({ ...perturbBody, field })).toEqual([400, 'bad_input']);
  });
});

describe('a delta that changes nothing (400 no_effect, as admission says)', () => {
  it.each([[5e-324], [-2.2e-308], [1e-310]])('%j', delta => {
    expect(code({ ...perturbBody, delta })).toEqual([400, 'no_effect']);
  });
  it('the smallest normal number changes something', () => {
    expect(code({ ...perturbBody, delta: 2.2250738585072014e-308 })).toBeNull();
  });
});

it('JSON Pointers as enclave.replay._pointer reads them', () => {
  expect(['/a', '/a/b', '/a~0b', '/a~1b', '/~01'].map(isPointer)).toEqual([true, true, true, true, true]);
  expect(['', '/', 'a', '/a/', '/~', '/~2'].map(isPointer)).toEqual([false, false, false, false, false, false]);
});

const revisionPolicy: Policy = {
  id: 'procurement.decider-model.revision',
  version: 1,
  tool: 'decider',
  schema_id: '',
  field: '',
  strategy: 'revision',
  params: { revision_point: 'model', alternates: ['r2', 'r3'] },
  status: 'active'
};
const perturbPolicy: Policy = {
  ...revisionPolicy,
  id: 'procurement.supplier-confidence.perturb',
  tool: 'supplier_lookup',
  field: '/confidence',
  strategy: 'perturb',
  params: { delta: [-0.05, 0.05] }
};

function form(changes: Partial<FormInput>): FormInput {
  return {
    specimenId: 'sp-1',
    callId: 'main/decider#0',
    policy: revisionPolicy,
    value: '',
    delta: '',
    revision: prefill(revisionPolicy).revision ?? '',
    samples: '30',
    seed: '1',
    tolerances: '',
    purpose: 'Dispute review of PO-2291 on revision r2',
    ...changes
  };
}

describe('the form, as the notebook panel builds it', () => {
  it('prefills the revision policy with its first alternate and sends the r2 audit', () => {
    expect(prefill(revisionPolicy)).toEqual({ revision: 'model=r2' });
    expect(buildBody(form({}))).toEqual({
      body: { ...revisionBody, policy_id: revisionPolicy.id }
    });
  });

  it('offers only policies for the chosen call, then the declared revision swap', () => {
    const call = { call_id: 'c', kind: 'tool', name: 'decider', alias: null, resolved: null, schema_id: null };
    const labels = policyOptions([revisionPolicy, perturbPolicy], call).map(o => o.value);
    expect(labels).toEqual([revisionPolicy, REVISION]);
  });

  it.each([
    ['zero-width purpose', { purpose: '\u200b' }, 'invalid_request'],
    ['NUL purpose', { purpose: 'a\x00' }, 'invalid_request'],
    ['"1.0" as seed', { seed: '1.0' }, 'invalid_request'],
    ['"1e3" as samples', { samples: '1e3' }, 'invalid_request'],
    ['no specimen', { specimenId: '' }, 'invalid_request'],
    ['a bad tolerance', { tolerances: 'score' }, 'invalid_request'],
    ['subnormal delta', { policy: perturbPolicy, delta: '5e-324' }, 'no_effect'],
    ['"true" as delta', { policy: perturbPolicy, delta: 'true' }, 'bad_input'],
    ['"nan" as delta', { policy: perturbPolicy, delta: 'nan' }, 'bad_input'],
    ['zero delta', { policy: perturbPolicy, delta: '0' }, 'bad_input']
  ])('refuses %s in the browser', (_, changes, expected) => {
    const built = buildBody(form(changes as Partial<FormInput>));
    expect('refusal' in built && built.refusal.code).toBe(expected);
  });

  it('a perturbation with the policy\'s delta is sent as a number', () => {
    const built = buildBody(form({ policy: perturbPolicy, delta: prefill(perturbPolicy).delta }));
    expect(built).toEqual({
      body: {
        specimen_id: 'sp-1',
        purpose: 'Dispute review of PO-2291 on revision r2',
        samples: 30,
        seed: 1,
        strategy: 'perturb',
        call_id: 'main/decider#0',
        field: '/confidence',
        policy_id: perturbPolicy.id,
        delta: -0.05
      }
    });
  });
});

// the procurement specimen's detail, as the service lists it: each cut's step comes after
// the work it holds (its state is what that work produced), the jitter after the last cut
function call(call_id: string, kind: string): SpecimenDetail['calls'][number] {
  const name = call_id.slice(call_id.indexOf('/') + 1, call_id.indexOf('#'));
  return { call_id, kind, name, alias: null, resolved: null, schema_id: null };
}
const procurement: SpecimenDetail = {
  calls: [
    call('main/template#0', 'context'),
    call('main/before-retrieval#0', 'cut'),
    call('main/retrieval#0', 'retrieval'),
    call('main/supplier_risk#0', 'tool'),
    call('main/decider#0', 'model'),
    call('main/before-authority#0', 'cut'),
    call('main/random#0', 'random'),
    call('main/authority#0', 'authority')
  ],
  cuts: [
    { name: 'before-retrieval', call_id: 'main/before-retrieval#0' },
    { name: 'before-authority', call_id: 'main/before-authority#0' }
  ],
  sealed_auditability: 'auditable'
};
// a run that drew randomness inside the work before its only cut
const randomFirst: SpecimenDetail = {
  calls: [call('main/random#0', 'random'), call('main/before-authority#0', 'cut'), call('main/supplier_risk#0', 'tool')],
  cuts: [{ name: 'before-authority', call_id: 'main/before-authority#0' }]
};
const supplierForm = (changes: Partial<FormInput>): FormInput =>
  form({ policy: perturbPolicy, callId: 'main/supplier_risk#0', delta: '-0.05', ...changes });

describe('per-sample detail', () => {
  it('sends detail only when every count is asked for, and the browser holds it to the two values', () => {
    const plain = buildBody(supplierForm({ perSample: false }), procurement);
    expect('body' in plain && 'detail' in plain.body).toBe(false);
    const every = buildBody(supplierForm({ perSample: true }), procurement);
    expect('body' in every && every.body.detail).toBe('per-sample');
    const body = { specimen_id: 'sp-1', strategy: 'revision', revision: 'model=r2', samples: 30, seed: 1, purpose: 'review' };
    expect(checkAuditBody({ ...body, detail: 'per-sample' })).toBeNull();
    expect(checkAuditBody({ ...body, detail: 'coarse' })).toBeNull();
    expect(checkAuditBody({ ...body, detail: 'everything' })).toMatchObject({ status: 422, code: 'invalid_request', field: 'detail' });
    expect(checkAuditBody({ ...body, detail: null })).toMatchObject({ status: 422, field: 'detail' });
  });
});

describe('start from a cut', () => {
  it('offers a full replay first, then the recorded cuts in order', () => {
    expect(cutOptions(procurement.cuts ?? []).map(o => o.value)).toEqual(['', 'before-retrieval', 'before-authority']);
    expect(cutOptions([])).toEqual([{ label: '— none: full replay —', value: '' }]);
  });

  it('sends from_cut only when a cut is chosen', () => {
    const full = buildBody(supplierForm({ fromCut: '' }), procurement);
    expect('body' in full && 'from_cut' in full.body).toBe(false);
    const unset = buildBody(supplierForm({}), procurement);
    expect('body' in unset && 'from_cut' in unset.body).toBe(false);
    const cut = buildBody(supplierForm({ fromCut: 'before-retrieval' }), procurement);
    expect(cut).toEqual({
      body: {
        specimen_id: 'sp-1',
        purpose: 'Dispute review of PO-2291 on revision r2',
        samples: 30,
        seed: 1,
        strategy: 'perturb',
        call_id: 'main/supplier_risk#0',
        field: '/confidence',
        policy_id: perturbPolicy.id,
        delta: -0.05,
        from_cut: 'before-retrieval'
      }
    });
    const revision = buildBody(form({ fromCut: 'before-retrieval' }), procurement);
    expect('body' in revision && revision.body.from_cut).toBe('before-retrieval');
  });

  it.each([
    ['a target inside the cut\'s work', supplierForm({ fromCut: 'before-authority' }), procurement, MESSAGES.target_before],
    ['the cut itself as target', supplierForm({ callId: 'main/before-retrieval#0', fromCut: 'before-retrieval' }), procurement, MESSAGES.target_before],
    ['a cut the specimen did not record', supplierForm({ fromCut: 'before-drop' }), procurement, MESSAGES.no_such_cut],
    ['a specimen with no cuts (sealed before cuts)', supplierForm({ fromCut: 'before-retrieval' }), { calls: procurement.calls }, MESSAGES.no_such_cut],
    ['randomness drawn before the cut', supplierForm({ fromCut: 'before-authority' }), randomFirst, MESSAGES.random_before],
    ['randomness before the cut, on a revision', form({ fromCut: 'before-authority' }), randomFirst, MESSAGES.random_before]
  ])('refuses %s as admission does (400 bad_input)', (_, input, detail, message) => {
    expect(buildBody(input, detail)).toEqual({ refusal: { status: 400, code: 'bad_input', field: 'from_cut', message } });
  });

  it('a target after the cut, and a revision, pass in the browser (the service judges the rest)', () => {
    const afterCut = buildBody(supplierForm({ callId: 'main/authority#0', fromCut: 'before-authority' }), procurement);
    expect('body' in afterCut).toBe(true);
    // a revision's swapped calls are not in the detail: admission decides
    expect('body' in buildBody(form({ fromCut: 'before-authority' }), procurement)).toBe(true);
  });

  it.each([[''], ['a/b'], ['a#0'], ['-lead'], ['x'.repeat(65)], ['before-drop\n'], ['before drop'], [5], [true], [['before-drop']]])(
    'from_cut %j is 422 invalid_request',
    fromCut => {
      expect(code({ ...revisionBody, from_cut: fromCut })).toEqual([422, 'invalid_request']);
    }
  );

  it('a cut name as the service takes it, or null, passes the shape', () => {
    expect(code({ ...revisionBody, from_cut: 'before-drop' })).toBeNull();
    expect(code({ ...perturbBody, from_cut: 'x'.repeat(64) })).toBeNull();
    expect(code({ ...perturbBody, from_cut: 'v1.2:cut_a' })).toBeNull();
    expect(code({ ...perturbBody, from_cut: null })).toBeNull();
  });
});
