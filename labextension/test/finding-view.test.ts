/**
 * Every view of a certificate opens with its finding: the viewer states the sentence the
 * figures give (``predicate/finding``, in parity with Python) before the badge, states
 * none for a predicate that fails its checks, and the verification results repeat the
 * sentence the browser re-derived from what it verified.
 */

import { beforeAll, describe, expect, it } from 'vitest';

import { renderCertificate } from '../src/certificate/view';
import { finding } from '../src/predicate';
import { renderResults } from '../src/verify/results';
import { verifyEnvelope } from '../src/verify/verifier';
import { loadTrustedKey } from '../src/verify/key';
import { fake, installFakeDom } from './fakeDom';
import { golden, newSigner, statementOf } from './fixtures';

beforeAll(() => installFakeDom());

function view(predicate: Record<string, any>, predicateType: string) {
  return fake(renderCertificate({ predicateType, version: 'v2', subject: 'specimen', predicate }));
}

describe('the finding in the certificate viewer', () => {
  it('opens the certificate, before the classification badge', () => {
    const statement = statementOf(golden('v2').envelope);
    const node = view(statement.predicate, statement.predicateType);
    const line = node.querySelector('p.enclave-finding')!;
    expect(line.getAttribute('data-finding')).toBe('stated');
    expect(line.textContent).toBe(finding(statement.predicate, statement.predicateType));
    expect(line.textContent).toContain('changed the decision in 13 of 20 paired runs (65%, 95% interval 40–85%)');
    const order = node.querySelectorAll('p').map(p => p.getAttribute('class'));
    expect(order.indexOf('enclave-finding')).toBeLessThan(order.indexOf('enclave-badges'));
  });

  it('states none for figures that do not pass their checks', () => {
    const statement = statementOf(golden('v2').envelope);
    statement.predicate.effect.flips = 19; // the rows and the rate say 13
    const line = view(statement.predicate, statement.predicateType).querySelector('p.enclave-finding')!;
    expect(line.getAttribute('data-finding')).toBe('none');
    expect(line.textContent).not.toContain('19');
  });
});

describe('the finding in the verification results', () => {
  it('repeats the sentence the browser re-derived, and flags a server that states another', async () => {
    const { envelope, pem } = golden('v2');
    const report = await verifyEnvelope(envelope, await loadTrustedKey(pem));
    expect(report.ok).toBe(true);
    const statement = statementOf(envelope);
    expect(report.finding).toBe(finding(statement.predicate, statement.predicateType));
    const agreed = fake(renderResults({ report }, { report: { ...report } })).querySelector('.enclave-verified-finding')!;
    expect(agreed.getAttribute('data-agree')).toBe('true');
    expect(agreed.textContent).toBe(`Verified finding: ${report.finding}`);
    const other = { ...report, finding: 'Something else.' };
    const disagreed = fake(renderResults({ report }, { report: other })).querySelector('.enclave-verified-finding')!;
    expect(disagreed.getAttribute('data-agree')).toBe('false');
  });

  it('states no finding for a certificate that fails verification', async () => {
    const { envelope } = golden('v2');
    const stranger = await newSigner(); // another issuer's key
    const report = await verifyEnvelope(envelope, await loadTrustedKey(stranger.pem));
    expect(report.ok).toBe(false);
    expect(report.finding).toBeNull();
    expect(fake(renderResults({ report }, { skipped: 'no server' })).querySelector('.enclave-verified-finding')).toBeNull();
  });
});

describe('a v3 certificate in the viewer', () => {
  it('verifies, and shows the interval, coarse figures and per-arm served-by without per-sample bins', async () => {
    const { envelope, pem } = golden('v3');
    const report = await verifyEnvelope(envelope, await loadTrustedKey(pem));
    expect(report.ok).toBe(true);
    expect(report.checks[2].detail).toContain('certificate v3');
    const statement = statementOf(envelope);
    const node = fake(renderCertificate({ predicateType: statement.predicateType, version: 'v3', subject: 'specimen', predicate: statement.predicate }));
    expect(node.querySelector('p.enclave-finding')!.textContent).toBe(report.finding);
    expect(node.querySelector('svg.enclave-delta-chart')).not.toBeNull();
    expect(node.querySelector('svg.enclave-histogram')).toBeNull();
    const served = node.querySelector('table.enclave-served-by-table')!;
    expect(served.querySelectorAll('th').map(th => th.textContent)).toContain('calls');
    expect(node.querySelector('p.enclave-substituted')!.textContent).toContain('none');
  });
});
