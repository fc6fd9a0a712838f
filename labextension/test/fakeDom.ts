/**
 * Just enough of a DOM for the views under test (they build with ``el``: createElement,
 * setAttribute, append, textContent), with a simple selector query: compound selectors
 * of a tag, classes and ``[attr]`` / ``[attr=value]``, joined by spaces (descendants).
 */

type Child = FakeElement | FakeText;

export class FakeText {
  constructor(public data: string) {}
  get textContent(): string {
    return this.data;
  }
}

export class FakeElement {
  readonly tagName: string;
  readonly attributes = new Map<string, string>();
  children: Child[] = [];
  hidden = false;
  disabled = false;
  tabIndex = 0;
  readonly dataset: Record<string, string> = {};

  constructor(tag: string) {
    this.tagName = tag.toLowerCase();
  }

  setAttribute(name: string, value: string): void {
    this.attributes.set(name, String(value));
  }

  getAttribute(name: string): string | null {
    return this.attributes.get(name) ?? null;
  }

  append(...nodes: Array<Child | string>): void {
    for (const node of nodes) {
      this.children.push(typeof node === 'string' ? new FakeText(node) : node);
    }
  }

  replaceChildren(...nodes: Array<Child | string>): void {
    this.children = [];
    this.append(...nodes);
  }

  addEventListener(): void {}

  get textContent(): string {
    return this.children.map(c => c.textContent).join('');
  }

  set textContent(value: string) {
    this.children = [new FakeText(value)];
  }

  get elements(): FakeElement[] {
    return this.children.filter((c): c is FakeElement => c instanceof FakeElement);
  }

  private matches(compound: string): boolean {
    const tag = /^[a-z0-9]+/i.exec(compound)?.[0];
    if (tag !== undefined && tag.toLowerCase() !== this.tagName) {
      return false;
    }
    const classes = (this.getAttribute('class') ?? '').split(/\s+/);
    for (const [, name] of compound.matchAll(/\.([\w-]+)/g)) {
      if (!classes.includes(name)) {
        return false;
      }
    }
    for (const m of Array.from(compound.matchAll(/\[([\w-]+)(=(['"]?)([^\]'"]*)\3)?\]/g))) {
      const [name, value] = [m[1], m[2] === undefined ? undefined : m[4]];
      const have = this.getAttribute(name);
      if (have === null || (value !== undefined && have !== value)) {
        return false;
      }
    }
    return true;
  }

  private descendants(): FakeElement[] {
    return this.elements.flatMap(e => [e, ...e.descendants()]);
  }

  querySelectorAll(selector: string): FakeElement[] {
    let found: FakeElement[] = [this];
    for (const compound of selector.trim().split(/\s+(?![^[]*\])/)) {
      const next = new Set<FakeElement>();
      for (const root of found) {
        root.descendants().filter(e => e.matches(compound)).forEach(e => next.add(e));
      }
      found = [...next];
    }
    return found;
  }

  querySelector(selector: string): FakeElement | null {
    return this.querySelectorAll(selector)[0] ?? null;
  }
}

/** Install the fake ``document`` (once per test file). */
export function installFakeDom(): void {
  (globalThis as { document?: unknown }).document = {
    createElement: (tag: string) => new FakeElement(tag),
    createElementNS: (_ns: string, tag: string) => new FakeElement(tag)
  };
}

/** A rendered node (typed as the DOM's) as the fake it is. */
export function fake(node: unknown): FakeElement {
  if (!(node instanceof FakeElement)) {
    throw new Error('not a fake element');
  }
  return node;
}
