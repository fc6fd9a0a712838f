/** Small DOM helpers: text only (never innerHTML), so certificate strings stay inert. */

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string | null>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null) {
      node.append(child);
    }
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(
  tag: string,
  attrs: Record<string, string | number> = {},
  ...children: Array<Node | string>
): SVGElement {
  const node = document.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, String(value));
  }
  node.append(...children);
  return node;
}

export function table(
  className: string,
  caption: string,
  header: string[],
  rows: Array<Array<string | Node>>
): HTMLTableElement {
  return el(
    'table',
    { class: `enclave-table ${className}` },
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, ...header.map(h => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows.map(row => el('tr', {}, ...row.map(cell => el('td', {}, cell)))))
  );
}

export function fmt(value: unknown, digits = 4, signed = true): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return value === null || value === undefined ? '—' : String(value);
  }
  const text = value.toFixed(digits);
  return signed && value > 0 ? `+${text}` : text;
}

export function interval(pair: unknown, digits = 4, signed = true): string {
  if (!Array.isArray(pair) || pair.length !== 2) {
    return '—';
  }
  return `[${fmt(pair[0], digits, signed)}, ${fmt(pair[1], digits, signed)}]`;
}

/** A titled section, labelled by its heading. */
export function section(title: string, className: string, ...children: Array<Node | null>): HTMLElement {
  const id = `enclave-h-${Math.random().toString(36).slice(2, 10)}`;
  return el(
    'section',
    { class: `enclave-section ${className}`, 'aria-labelledby': id },
    el('h3', { id }, title),
    ...children
  );
}

/** A certificate value as display text ("—" when absent). */
export function text(value: unknown): string {
  if (value === null || value === undefined) {
    return '—';
  }
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
