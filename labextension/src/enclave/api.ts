/**
 * The enclave service, reached only through the server extension's forwarding routes
 * (``GET``/``POST /enclave/api/<route>``, ``jupyter_ext/_routes.py``): the browser never
 * holds the analyst's service token. Refusals keep the service's code and message.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export class EnclaveRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string
  ) {
    super(message);
  }
}

export interface WhoAmI {
  name: string;
  tenant: string;
  roles: string[];
}

/** One item of ``GET /specimens``: ``ledger.SpecimenSummary.to_dict()``, the same keys
 * ``replay-enclave specimens list --json`` prints. */
export interface SpecimenSummary {
  specimen_id: string;
  tenant_id: string;
  agent_name: string;
  agent_version: string;
  manifest_digest: string;
  highest_classification: string;
  sealed_at: string;
  step_count: number;
  erased: boolean;
  legal_hold: boolean;
}

export interface AuditStatus {
  audit_id: string;
  status: 'QUEUED' | 'RUNNING' | 'FINALIZING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  progress_done: number;
  progress_total: number;
  classification: string | null;
  failure_code: string | null;
  has_certificate: boolean;
  created_at: string;
  /** The certificate's finding in plain language (or a failed audit's); null while it runs. */
  finding?: string | null;
}

export interface Page<T> {
  items: T[];
  limit: number;
  next: string | null;
  total: number;
}

/** One release report in the service's list (``GET /reports``). */
export interface ReportSummary {
  report_id: string;
  issued_at: string;
  gate_passed: boolean;
  specimens: number;
  selection_digest: string;
}

/** One page of reports: the cursor of the next is ``next`` (as every other list of the
 * service names it) or ``next_cursor``; absent or null, there is none. */
export interface ReportPage {
  items: ReportSummary[];
  next?: string | null;
  next_cursor?: string | null;
  total?: number;
}

export function nextCursor(page: ReportPage): string | null {
  return page.next ?? page.next_cursor ?? null;
}

export const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

export async function call<T>(
  method: 'GET' | 'POST',
  route: string,
  options: { query?: Record<string, string | number | null | undefined>; body?: unknown } = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const query = Object.entries(options.query ?? {})
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const url = URLExt.join(settings.baseUrl, 'enclave', 'api', route) + (query ? `?${query}` : '');
  const init: RequestInit = { method };
  if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch {
    throw new EnclaveRefusal(0, 'unreachable', 'the Jupyter server could not be reached');
  }
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    throw new EnclaveRefusal(
      response.status,
      typeof error?.code === 'string' ? error.code : `http_${response.status}`,
      typeof error?.message === 'string' ? error.message : `the server answered ${response.status}`
    );
  }
  return data as T;
}
