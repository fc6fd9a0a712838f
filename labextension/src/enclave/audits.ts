/**
 * The analyst's audits, kept fresh by polling the server extension while any of them
 * is still running; polling stops when nothing runs and starts again when a request is
 * made or the list is refreshed. One tracker feeds the sidebar and the status bar.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { AuditStatus, call, EnclaveRefusal, Page, TERMINAL } from './api';

export const POLL_MS = 1000;
const PAGE = 20;

export class AuditTracker {
  private _items: AuditStatus[] = [];
  private _next: string | null = null;
  private _total = 0;
  private _error: EnclaveRefusal | null = null;
  private timer: number | null = null;
  private readonly _changed = new Signal<this, void>(this);

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get items(): readonly AuditStatus[] {
    return this._items;
  }

  get total(): number {
    return this._total;
  }

  get hasMore(): boolean {
    return this._next !== null;
  }

  get error(): EnclaveRefusal | null {
    return this._error;
  }

  get running(): number {
    return this._items.filter(a => !TERMINAL.has(a.status)).length;
  }

  get polling(): boolean {
    return this.timer !== null;
  }

  /** The first page again (newest first), then poll if anything runs. */
  async refresh(): Promise<void> {
    try {
      const page = await call<Page<AuditStatus>>('GET', 'audits', { query: { limit: PAGE } });
      this._items = page.items;
      this._next = page.next;
      this._total = page.total;
      this._error = null;
    } catch (error) {
      if (!(error instanceof EnclaveRefusal)) {
        throw error;
      }
      this._error = error;
    }
    this._changed.emit();
    this.schedule();
  }

  async more(): Promise<void> {
    if (this._next === null) {
      return;
    }
    const page = await call<Page<AuditStatus>>('GET', 'audits', { query: { limit: PAGE, cursor: this._next } });
    const known = new Set(this._items.map(a => a.audit_id));
    this._items = [...this._items, ...page.items.filter(a => !known.has(a.audit_id))];
    this._next = page.next;
    this._changed.emit();
  }

  /** A status the service just answered with (a request, a cancel): shown at once. */
  update(status: AuditStatus): void {
    const at = this._items.findIndex(a => a.audit_id === status.audit_id);
    if (at < 0) {
      this._items = [status, ...this._items];
      this._total += 1;
    } else {
      this._items = this._items.map((a, i) => (i === at ? status : a));
    }
    this._changed.emit();
    this.schedule();
  }

  private schedule(): void {
    if (this.running === 0) {
      this.stop();
      return;
    }
    if (this.timer === null) {
      this.timer = window.setTimeout(() => void this.poll(), POLL_MS);
    }
  }

  /** Each running audit's own status (a few requests, not a page per tick). */
  private async poll(): Promise<void> {
    this.timer = null;
    const running = this._items.filter(a => !TERMINAL.has(a.status));
    const answers = await Promise.all(
      running.map(a =>
        call<AuditStatus>('GET', `audits/${encodeURIComponent(a.audit_id)}`).catch((error: unknown) => {
          if (error instanceof EnclaveRefusal) {
            return null;
          }
          throw error;
        })
      )
    );
    const byId = new Map(answers.filter((a): a is AuditStatus => a !== null).map(a => [a.audit_id, a]));
    this._items = this._items.map(a => byId.get(a.audit_id) ?? a);
    if (byId.size < running.length) {
      // an audit we could not read any more: stop asking for it
      const gone = new Set(running.filter(a => !byId.has(a.audit_id)).map(a => a.audit_id));
      this._items = this._items.filter(a => !gone.has(a.audit_id));
    }
    this._changed.emit();
    this.schedule();
  }

  stop(): void {
    if (this.timer !== null) {
      window.clearTimeout(this.timer);
      this.timer = null;
    }
  }

  dispose(): void {
    this.stop();
    Signal.clearData(this);
  }
}
