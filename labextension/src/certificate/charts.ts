/**
 * Charts as inline SVG: shapes carry classes only, colours come from JupyterLab's CSS
 * variables (style/base.css), so the charts read in light and dark themes alike.
 */

import { asArray, asNumber, asObject, Json } from './model';
import { fmt, svg } from './dom';

const W = 460;
const H = 180;
const LEFT = 36;
const RIGHT = 12;
const TOP = 14;
const AXIS = 34;

/** Paired score deltas, binned by the certificate's own (possibly uneven) edges. */
export function histogramChart(effect: Json): SVGElement | null {
  const histogram = asObject(effect.histogram);
  const counts = asArray(histogram.counts).map(asNumber);
  const edges = asArray(histogram.edges).map(asNumber);
  if (counts.length === 0 || edges.length !== counts.length + 1 || counts.includes(null)) {
    return null;
  }
  const values = counts as number[];
  const total = values.reduce((a, b) => a + b, 0);
  const peak = Math.max(1, ...values);
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - AXIS;
  const barW = plotW / values.length;
  const chart = svg('svg', {
    class: 'enclave-histogram',
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'data-count': total,
    'aria-label': `Histogram of ${total} paired score deltas (intervened minus baseline) in ${values.length} bins`
  });
  chart.append(svg('title', {}, 'Paired score deltas'));
  const baseY = TOP + plotH;
  chart.append(svg('line', { class: 'enclave-axis', x1: LEFT, y1: baseY, x2: W - RIGHT, y2: baseY }));
  chart.append(svg('text', { class: 'enclave-tick', x: LEFT - 4, y: TOP + 4, 'text-anchor': 'end' }, String(peak)));
  chart.append(svg('text', { class: 'enclave-tick', x: LEFT - 4, y: baseY, 'text-anchor': 'end' }, '0'));
  values.forEach((count, i) => {
    const h = (count / peak) * plotH;
    const lo = edges[i] as number;
    const hi = edges[i + 1] as number;
    const bar = svg('rect', {
      class: 'enclave-bar',
      x: LEFT + i * barW + 1,
      y: baseY - h,
      width: Math.max(1, barW - 2),
      height: h,
      'data-count': count
    });
    bar.append(svg('title', {}, `${fmt(lo, 3)} to ${fmt(hi, 3)}: ${count}`));
    chart.append(bar);
  });
  // edge labels: every other edge, and always zero, so the uneven bins stay legible
  edges.forEach((edge, i) => {
    if (i % 2 !== 0 && edge !== 0) {
      return;
    }
    const x = LEFT + i * barW;
    chart.append(svg('line', { class: 'enclave-axis', x1: x, y1: baseY, x2: x, y2: baseY + 4 }));
    chart.append(
      svg(
        'text',
        { class: 'enclave-tick', x, y: baseY + 16, 'text-anchor': 'middle' },
        String(edge)
      )
    );
  });
  const zero = edges.indexOf(0);
  if (zero >= 0) {
    const x = LEFT + zero * barW;
    chart.append(svg('line', { class: 'enclave-zero', x1: x, y1: TOP, x2: x, y2: baseY }));
  }
  chart.append(
    svg(
      'text',
      { class: 'enclave-label', x: LEFT + plotW / 2, y: H - 4, 'text-anchor': 'middle' },
      'score delta (intervened − baseline), bins from the certificate'
    )
  );
  return chart;
}

/** One interval on a fixed scale: the band, the point estimate, and optional reference. */
function intervalRow(
  chart: SVGElement,
  y: number,
  label: string,
  estimate: number | null,
  range: [number, number] | null,
  scale: (v: number) => number,
  className: string
): void {
  chart.append(svg('text', { class: 'enclave-label', x: 4, y: y + 4 }, label));
  if (range !== null) {
    const band = svg('rect', {
      class: `enclave-interval ${className}`,
      x: scale(range[0]),
      y: y - 6,
      width: Math.max(2, scale(range[1]) - scale(range[0])),
      height: 12
    });
    band.append(svg('title', {}, `${label}: [${fmt(range[0], 3, false)}, ${fmt(range[1], 3, false)}]`));
    chart.append(band);
  }
  if (estimate !== null) {
    chart.append(svg('circle', { class: 'enclave-estimate', cx: scale(estimate), cy: y, r: 4 }));
  }
}

function pair(value: unknown): [number, number] | null {
  const items = asArray(value).map(asNumber);
  return items.length === 2 && items[0] !== null && items[1] !== null
    ? [items[0], items[1]]
    : null;
}

/** Flip rate with its interval on [0, 1] (and the TOST upper bound on v2). */
export function flipRateChart(effect: Json): SVGElement | null {
  const rate = asNumber(effect.flip_rate);
  const range = pair(effect.flip_interval);
  if (rate === null && range === null) {
    return null;
  }
  const left = 150;
  const right = W - RIGHT - 10;
  const scale = (v: number) => left + Math.min(1, Math.max(0, v)) * (right - left);
  const conf = asNumber(effect.confidence);
  const chart = svg('svg', {
    class: 'enclave-flip-chart',
    viewBox: `0 0 ${W} 92`,
    role: 'img',
    'aria-label': `Decision flip rate ${fmt(rate, 3, false)}, interval ${range ? `${fmt(range[0], 3, false)} to ${fmt(range[1], 3, false)}` : 'not stated'}`
  });
  chart.append(svg('title', {}, 'Decision flip rate'));
  const tol = asNumber(effect.flip_tolerance);
  if (tol !== null) {
    chart.append(svg('rect', { class: 'enclave-tolerance', x: scale(0), y: 10, width: scale(tol) - scale(0), height: 28 }));
  }
  intervalRow(
    chart,
    24,
    `flip rate${conf !== null ? ` (${Math.round(conf * 100)}%)` : ''}`,
    rate,
    range,
    scale,
    'enclave-flip-interval'
  );
  const upper = asNumber(asObject(effect.equivalence).flip_upper);
  if (upper !== null) {
    chart.append(svg('line', { class: 'enclave-bound', x1: scale(upper), y1: 12, x2: scale(upper), y2: 36 }));
  }
  chart.append(svg('line', { class: 'enclave-axis', x1: left, y1: 50, x2: right, y2: 50 }));
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    chart.append(svg('line', { class: 'enclave-axis', x1: scale(tick), y1: 50, x2: scale(tick), y2: 54 }));
    chart.append(svg('text', { class: 'enclave-tick', x: scale(tick), y: 66, 'text-anchor': 'middle' }, String(tick)));
  }
  const legend = [
    'band: interval',
    tol !== null ? 'grey: flip tolerance' : '',
    upper !== null ? 'line: one-sided upper bound (TOST)' : ''
  ].filter(Boolean);
  chart.append(svg('text', { class: 'enclave-label', x: left, y: 86 }, legend.join(' · ')));
  return chart;
}

/** The mean paired score delta with its interval and the TOST interval, around zero and
 * the score tolerance: what a v3 certificate shows instead of per-sample bins. */
export function deltaChart(effect: Json): SVGElement | null {
  const mean = asNumber(effect.mean_delta);
  const range = pair(effect.delta_interval);
  if (mean === null || range === null) {
    return null;
  }
  const equivalence = pair(asObject(effect.equivalence).delta_interval);
  const tol = asNumber(effect.score_tolerance) ?? 0;
  const reach = Math.min(1, Math.max(Math.abs(range[0]), Math.abs(range[1]), tol, 1e-4) * 1.25);
  const left = 150;
  const right = W - RIGHT - 10;
  const scale = (v: number) => left + ((Math.min(reach, Math.max(-reach, v)) + reach) / (2 * reach)) * (right - left);
  const conf = asNumber(effect.confidence);
  const chart = svg('svg', {
    class: 'enclave-delta-chart',
    viewBox: `0 0 ${W} 112`,
    role: 'img',
    'aria-label': `Mean score delta ${fmt(mean)}, interval ${fmt(range[0])} to ${fmt(range[1])}`
  });
  chart.append(svg('title', {}, 'Mean paired score delta'));
  chart.append(svg('rect', { class: 'enclave-tolerance', x: scale(-tol), y: 10, width: Math.max(1, scale(tol) - scale(-tol)), height: 50 }));
  intervalRow(chart, 24, `mean delta${conf !== null ? ` (${Math.round(conf * 100)}%)` : ''}`, mean, range, scale, 'enclave-delta-interval');
  if (equivalence !== null) {
    intervalRow(chart, 46, 'equivalence (TOST)', mean, equivalence, scale, 'enclave-equivalence-interval');
  }
  chart.append(svg('line', { class: 'enclave-axis', x1: left, y1: 70, x2: right, y2: 70 }));
  for (const tick of [-reach, 0, reach]) {
    chart.append(svg('line', { class: 'enclave-axis', x1: scale(tick), y1: 70, x2: scale(tick), y2: 74 }));
    chart.append(svg('text', { class: 'enclave-tick', x: scale(tick), y: 86, 'text-anchor': 'middle' }, fmt(tick)));
  }
  chart.append(svg('text', { class: 'enclave-label', x: left, y: 106 }, 'band: interval · grey: score tolerance'));
  return chart;
}
