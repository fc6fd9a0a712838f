/** The server extension's verification (``POST /enclave/verify``): the Python verifier,
 * run with the keys configured on the Jupyter server, on exactly the bytes posted. */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { VerifyReport } from './verifier';

export class ServerVerifyError extends Error {}

function isReport(value: unknown): value is VerifyReport {
  const v = value as VerifyReport;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.ok === 'boolean' &&
    Array.isArray(v.checks) &&
    v.checks.every(
      c => typeof c.name === 'string' && typeof c.ok === 'boolean' && typeof c.detail === 'string'
    )
  );
}

/** The server's answer: its report, or why it did not check (a bundle, with no log key
 * configured on the Jupyter server). */
export type ServerAnswer = { report: VerifyReport } | { skipped: string };

function isSkipped(value: unknown): value is { skipped: string } {
  return typeof value === 'object' && value !== null && typeof (value as { skipped?: unknown }).skipped === 'string';
}

export async function verifyOnServer(envelopeText: string): Promise<ServerAnswer> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'enclave', 'verify');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      { method: 'POST', body: envelopeText, headers: { 'Content-Type': 'application/json' } },
      settings
    );
  } catch {
    throw new ServerVerifyError('the Jupyter server could not be reached');
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
    throw new ServerVerifyError(
      typeof message === 'string' ? message : `the server answered ${response.status}`
    );
  }
  if (isSkipped(body)) {
    return { skipped: body.skipped };
  }
  if (!isReport(body)) {
    throw new ServerVerifyError('the server answered with something that is not a report');
  }
  return { report: body };
}
