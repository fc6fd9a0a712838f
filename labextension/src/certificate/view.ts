/**
 * The certificate rendered as DOM: classification, the question, baseline layers, the
 * comparison with its intervals and charts, served-by, governed inference and disclosure
 * (v2), lineage and what is not established. Used by the document viewer and by the MIME renderer.
 */

import { finding, predicateProblems, Unevaluable } from '../predicate';
import { deltaChart, flipRateChart, histogramChart } from './charts';
import { el, fmt, interval, section, table, text } from './dom';
import { inference, INFERENCE_COLUMN } from './inference';
import { asArray, asObject, CertificateView, Json } from './model';

function badge(predicate: Json): HTMLElement {
  const classification = text(predicate.classification);
  const auditability = text(asObject(predicate.auditability).class);
  return el(
    'p',
    { class: 'enclave-badges' },
    el(
      'span',
      {
        class: 'enclave-classification',
        'data-classification': classification,
        'data-auditability': auditability,
        role: 'status',
        'aria-label': `classification ${classification}`
      },
      classification
    ),
    ' ',
    el('span', { class: 'enclave-auditability', 'aria-label': `auditability ${auditability}` }, auditability)
  );
}

function question(predicate: Json): HTMLElement {
  const request = asObject(predicate.request);
  const intervention = asObject(predicate.intervention);
  const target = asObject(intervention.target);
  const params = asObject(request.parameters);
  const policy = asObject(request.policy);
  const rows: Array<[string, string]> = [
    ['specimen', text(request.specimen)],
    ['intervention', `${text(intervention.strategy ?? request.strategy)} ${text(target.call_id ?? request.call)}${target.field ? ` ${text(target.field)}` : ''}${params.kind ? ` (${text(params.kind)})` : ''}`],
    ['declared changes', asArray(intervention.declared_changes).map(text).join(', ') || '—'],
    ['actual changes', asArray(intervention.actual_changes).map(text).join(', ') || '—'],
    ['everything else unchanged', intervention.unchanged_digest_equal === true ? 'yes (digests equal)' : 'NOT shown'],
    ['policy', policy.id ? `${text(policy.id)} v${text(policy.version)}` : '—'],
    ['purpose', text(request.purpose)],
    ['requester', text(request.requester)],
    ['samples', `${text(request.samples)} paired, seed ${text(request.seed)}`]
  ];
  const list = el('dl', { class: 'enclave-question' });
  for (const [name, value] of rows) {
    list.append(el('dt', {}, name), el('dd', { 'data-field': name }, value));
  }
  return section('Question', 'enclave-question-section', list);
}

function baseline(predicate: Json): HTMLElement {
  const base = asObject(predicate.baseline);
  const layers = asObject(base.layers);
  const rows = Object.entries(layers).map(([name, value]) => {
    const layer = asObject(value);
    const details = Object.entries(layer)
      .filter(([k]) => k !== 'ok')
      .map(([k, v]) => `${k}: ${text(v)}`)
      .join('; ');
    return [name, layer.ok === true ? 'reproduced' : 'differs', details];
  });
  const reproduced = base.reproduced === true;
  return section(
    `Baseline: ${reproduced ? 'reproduced' : 'NOT reproduced'}`,
    'enclave-baseline',
    table('enclave-baseline-layers', 'Baseline replay compared with the recording, per layer', ['layer', 'result', 'measured'], rows)
  );
}

function comparison(predicate: Json): HTMLElement {
  const effect = asObject(predicate.effect);
  if (Object.keys(effect).length === 0) {
    return section('Comparison', 'enclave-comparison', el('p', { class: 'enclave-no-effect' }, 'No effect is reported by this certificate.'));
  }
  const conf = typeof effect.confidence === 'number' ? `${Math.round(effect.confidence * 100)}%` : '';
  const equivalence = asObject(effect.equivalence);
  const mde = asObject(effect.mde);
  const rows: string[][] = [
    ['mean score delta', fmt(effect.mean_delta), `${conf} ${interval(effect.delta_interval)}`],
    ['decision flip rate', fmt(effect.flip_rate, 3, false), `${conf} ${interval(effect.flip_interval, 3, false)}`],
    ['baseline rate', fmt(effect.baseline_rate, 3, false), ''],
    ['intervened rate', fmt(effect.intervened_rate, 3, false), '']
  ];
  if (effect.flips !== undefined) {
    rows.push(['flips', text(effect.flips), '']);
  }
  if (Object.keys(equivalence).length > 0) {
    rows.push([
      `equivalence (${text(equivalence.test)}, α=${text(equivalence.alpha)})`,
      `flip upper ${fmt(equivalence.flip_upper, 3, false)}`,
      interval(equivalence.delta_interval)
    ]);
  }
  if (Object.keys(mde).length > 0) {
    rows.push([`minimum detectable effect (power ${text(mde.power)})`, `delta ${fmt(mde.delta)}`, `flip rate ${fmt(mde.flip_rate, 3, false)}`]);
  }
  if (effect.score_tolerance !== undefined) {
    rows.push(['tolerances', `score ${text(effect.score_tolerance)}`, `flip ${text(effect.flip_tolerance)}`]);
  }
  const children: Array<Node | null> = [
    table('enclave-comparison-table', 'Intervened compared with baseline, paired samples', ['measure', 'estimate', 'interval'], rows)
  ];
  const layerChanges = asObject(effect.layer_changes);
  if (Object.keys(layerChanges).length > 0) {
    children.push(
      table('enclave-layer-changes', 'Samples where the intervened run differs from the baseline, per layer (a count, or none / some / all of them)', ['layer', 'samples changed'], Object.entries(layerChanges).map(([k, v]) => [k, text(v)]))
    );
  }
  const histogram = histogramChart(effect);
  const delta = Object.hasOwn(effect, 'histogram') ? null : deltaChart(effect); // v3: no bins
  const flips = flipRateChart(effect);
  children.push(
    el(
      'div',
      { class: 'enclave-charts' },
      histogram !== null
        ? el('figure', {}, histogram, el('figcaption', {}, 'Paired score deltas'))
        : delta !== null
          ? el('figure', {}, delta, el('figcaption', {}, 'Mean paired score delta (per-sample figures are not disclosed)'))
          : el('p', { class: 'enclave-no-histogram' }, 'No score histogram (categorical outcome).'),
      flips === null ? null : el('figure', {}, flips, el('figcaption', {}, 'Decision flip rate with its interval'))
    )
  );
  const placebo = asObject(predicate.placebo);
  children.push(
    el(
      'p',
      { class: 'enclave-placebo', 'data-passed': placebo.passed === undefined ? 'none' : String(placebo.passed === true) },
      placebo.passed === undefined
        ? 'Placebo control: not run'
        : `Placebo control: ${placebo.passed === true ? 'passed' : 'FAILED'} (flips ${text(placebo.flips)}, max |delta| ${text(placebo.max_abs_delta)})`
    )
  );
  return section('Comparison (paired samples)', 'enclave-comparison', ...children);
}

function servedBy(predicate: Json): HTMLElement | null {
  const rows = asArray(predicate.served_by).map(asObject);
  if (rows.length === 0) {
    return null;
  }
  const tight = rows.some(r => Object.hasOwn(r, 'calls')); // v3: per arm, none / some / all
  const columns = ['arm', tight ? 'calls' : 'call', 'record', 'substitute', 'intervention', 'unservable', 'unused', 'absent'];
  if (rows.some(r => Object.hasOwn(r, INFERENCE_COLUMN))) {
    columns.push(INFERENCE_COLUMN); // on every row of a governed audit (the verifier checks it)
  }
  const caption = tight
    ? 'How calls were served, per arm: none, some or all of the (call, sample) cells'
    : 'How each call was served, per arm (each row sums to the sample count)';
  const substituted = asArray(predicate.substituted).map(text);
  return section(
    'Served by',
    'enclave-served-by',
    table('enclave-served-by-table', caption, columns, rows.map(r => columns.map(c => text(r[c])))),
    tight ? el('p', { class: 'enclave-substituted' }, `Recorded boundaries a declared substitute served: ${substituted.join(', ') || 'none'}`) : null
  );
}

function disclosure(predicate: Json): HTMLElement {
  const d = asObject(predicate.disclosure);
  const bits = typeof d.bits === 'number' ? d.bits : null;
  return el(
    'p',
    { class: 'enclave-disclosure', 'data-bits': bits === null ? 'none' : bits.toFixed(2) },
    bits === null
      ? 'Disclosure bound: not stated'
      : `Disclosure bound: at most ${bits.toFixed(2)} bits of agent-influenced content (${asArray(d.terms).length} terms)`
  );
}

function lineage(predicate: Json): HTMLElement {
  const items = asArray(predicate.lineage).map(asObject).map(link => {
    const parts = Object.entries(link).map(([k, v]) => `${k}: ${text(v)}`);
    return el('li', {}, parts.join(', '));
  });
  return section('Lineage', 'enclave-lineage-section', el('ol', { class: 'enclave-lineage' }, ...items));
}

function notEstablished(predicate: Json): HTMLElement {
  const items = asArray(predicate.not_established).map(item => el('li', {}, text(item)));
  return section('Not established', 'enclave-not-established-section', el('ul', { class: 'enclave-not-established' }, ...items));
}

/**
 * The finding, from the signed figures (``predicate/finding``), once the predicate passes
 * its checks: one that does not states none. The signature is checked by *Verify*.
 */
export function findingOf(view: CertificateView): string | null {
  try {
    if (predicateProblems(view.predicate, view.predicateType).length > 0) {
      return null;
    }
  } catch (error) {
    if (error instanceof Unevaluable || (error instanceof Error && error.message === 'unknown predicate type')) {
      return null;
    }
    throw error;
  }
  return finding(view.predicate, view.predicateType);
}

function findingLine(view: CertificateView): HTMLElement {
  const sentence = findingOf(view);
  return sentence === null
    ? el('p', { class: 'enclave-finding', 'data-finding': 'none' }, "No finding: this certificate's figures do not pass their checks.")
    : el('p', { class: 'enclave-finding', 'data-finding': 'stated' }, sentence);
}

export function renderCertificate(view: CertificateView): HTMLElement {
  const p = view.predicate;
  const auditability = asObject(p.auditability);
  const root = el(
    'article',
    {
      class: 'enclave-certificate',
      'data-version': view.version,
      'aria-label': `Replay Enclave certificate about ${view.subject}`
    },
    el('h2', {}, `Certificate about ${view.subject || 'an unnamed subject'}`),
    findingLine(view),
    badge(p),
    auditability.reason ? el('p', { class: 'enclave-auditability-reason' }, text(auditability.reason)) : null,
    question(p),
    baseline(p),
    comparison(p),
    servedBy(p),
    inference(p),
    disclosure(p),
    lineage(p),
    notEstablished(p),
    el('p', { class: 'enclave-issued' }, `issued ${text(p.issued_at)} by ${text(p.issuer)} (${view.predicateType || 'unknown predicate type'})`)
  );
  return root;
}
