/**
 * The certificate view shows governed inference: per arm the calls asked of the endpoint
 * and served from the audit's record with their tokens, the grants, and the served-by
 * inference column, exactly when the certificate carries them. The governed certificate
 * is the parity corpus's consistent one (``scripts/export-predicate-corpus.py``), so the
 * view is tested on a predicate the verifier accepts.
 */

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { readCertificate } from '../src/certificate/model';
import { renderCertificate } from '../src/certificate/view';
import { predicateProblems } from '../src/predicate';
import { renderEnvelope } from '../src/viewer/dispatch';
import { fake, FakeElement, installFakeDom } from './fakeDom';
import { golden, newSigner, signed, statementOf } from './fixtures';

type Ops = Array<[Array<string | number>, unknown]>;
const corpus = JSON.parse(readFileSync(resolve(__dirname, 'fixtures', 'predicate-corpus.json'), 'utf-8'));

function governed(): Record<string, any> {
  const statement = statementOf(golden('v2').envelope);
  const ops: Ops = corpus.cases.find((c: { name: string }) => c.name === 'inference').ops;
  for (const [path, value] of ops) {
    let node = statement.predicate;
    for (const part of path.slice(0, -1)) {
      node = node[part];
    }
    node[path[path.length - 1]] = structuredClone(value);
  }
  return statement;
}

function rendered(statement: Record<string, any>): FakeElement {
  return fake(renderCertificate({ predicateType: statement.predicateType, version: 'v2', subject: 'specimen', predicate: statement.predicate }));
}

function cells(row: FakeElement): string[] {
  return row.querySelectorAll('td').map(td => td.textContent);
}

beforeAll(() => installFakeDom());

describe('governed inference in the certificate view', () => {
  it('is rendered from a certificate the verifier accepts', () => {
    const statement = governed();
    expect(predicateProblems(statement.predicate, statement.predicateType)).toEqual([]);
  });

  it('shows per arm the calls asked of the endpoint, from the record and the tokens', () => {
    const statement = governed();
    const arms = statement.predicate.inference.arms;
    const table = rendered(statement).querySelector('section.enclave-inference table.enclave-inference-arms')!;
    expect(table.querySelectorAll('th').map(th => th.textContent)).toEqual([
      'arm',
      'asked of the endpoint',
      "from the audit's record",
      'input tokens',
      'output tokens'
    ]);
    const rows = table.querySelectorAll('tbody tr').map(cells);
    expect(rows.map(r => r[0])).toEqual(['preparation', 'baseline', 'intervened', 'placebo']);
    for (const [arm, asked, fromRecord, input, output] of rows) {
      const tally = arms[arm];
      expect([asked, fromRecord, input, output]).toEqual(
        [tally.asked, tally.from_record, tally.input_tokens, tally.output_tokens].map(String)
      );
    }
    expect(rows[2]).toEqual(['intervened', '13', '0', '2756', '117']);
  });

  it('shows each grant: boundary, endpoint, pinned model, vary and caps', () => {
    const statement = governed();
    const grant = statement.predicate.inference.grants[0];
    const table = rendered(statement).querySelector('table.enclave-inference-grants')!;
    expect(table.querySelectorAll('th').map(th => th.textContent)).toEqual(['boundary', 'endpoint', 'pinned model', 'vary', 'caps']);
    expect(table.querySelectorAll('tbody tr').map(cells)).toEqual([
      [
        grant.boundary,
        grant.endpoint,
        grant.model,
        'seed, temperature',
        'calls 64, input tokens 65536, output tokens 8192, wall seconds 600'
      ]
    ]);
  });

  it('says whether the supervisor set the provider seed', () => {
    const statement = governed();
    const seeded = rendered(statement).querySelector('.enclave-inference-seeded')!;
    expect(seeded.getAttribute('data-seeded')).toBe('true');
    statement.predicate.inference.seeded = false;
    const unseeded = rendered(statement).querySelector('.enclave-inference-seeded')!;
    expect(unseeded.getAttribute('data-seeded')).toBe('false');
    expect(unseeded.textContent).toContain('not varied');
  });

  it('adds the inference column to served-by, with the calls it answered', () => {
    const statement = governed();
    const table = rendered(statement).querySelector('table.enclave-served-by-table')!;
    const header = table.querySelectorAll('th').map(th => th.textContent);
    expect(header[header.length - 1]).toBe('inference');
    const rows = table.querySelectorAll('tbody tr').map(cells);
    const expected = statement.predicate.served_by.map((r: Record<string, unknown>) => String(r.inference));
    expect(rows.map(r => r[r.length - 1])).toEqual(expected);
    expect(rows.find(r => r[0] === 'intervened' && r[1] === 'new calls')!.slice(-1)).toEqual(['13']);
  });

  it('shows neither without inference: the golden certificate renders as before', () => {
    const node = fake(renderEnvelope(golden('v2').envelope).node);
    expect(node.querySelector('section.enclave-inference')).toBeNull();
    expect(node.querySelectorAll('table.enclave-served-by-table th').map(th => th.textContent)).not.toContain('inference');
    expect(node.querySelector('table.enclave-served-by-table')).not.toBeNull();
  });

  it('renders a signed governed certificate through the document viewer, after served-by', async () => {
    const issuer = await newSigner();
    const envelope = await signed(issuer, governed());
    const view = readCertificate(envelope);
    expect(view.predicate.inference).toBeDefined();
    const node = fake(renderEnvelope(envelope).node);
    const sections = node.querySelectorAll('section').map(s => s.getAttribute('class'));
    const at = (name: string) => sections.findIndex(c => (c ?? '').split(' ').includes(name));
    expect(at('enclave-inference')).toBe(at('enclave-served-by') + 1);
  });

  it('keeps a malformed section inert: missing members show as a dash', () => {
    const statement = governed();
    statement.predicate.inference = { grants: [{ boundary: '<b>x</b>' }], arms: { intervened: 'many' } };
    const node = rendered(statement);
    const grants = node.querySelector('table.enclave-inference-grants tbody tr')!;
    expect(cells(grants)).toEqual(['<b>x</b>', '—', '—', '—', 'calls —, input tokens —, output tokens —, wall seconds —']);
    expect(grants.querySelector('b')).toBeNull();
    const arms = node.querySelectorAll('table.enclave-inference-arms tbody tr').map(cells);
    expect(arms[2]).toEqual(['intervened', '—', '—', '—', '—']);
    expect(node.querySelector('.enclave-inference-seeded')!.getAttribute('data-seeded')).toBe('none');
  });
});
