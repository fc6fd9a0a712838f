/**
 * One envelope, rendered by what its statement is: a release report (its predicate type)
 * gets the report view, anything else the certificate view as before. Used by the
 * document viewer and the MIME renderer; throws UnreadableCertificate as reading does.
 */

import { readCertificate } from '../certificate/model';
import { renderCertificate } from '../certificate/view';
import { isReportStatement, readReport } from '../report/model';
import { renderReport } from '../report/view';
import { isBundle } from '../verify/bundle';
import { isReportBundle } from '../verify/reportBundle';

export type StatementKind = 'certificate' | 'report';

export interface Rendered {
  kind: StatementKind;
  node: HTMLElement;
}

export const VERIFY_LABEL: Readonly<Record<StatementKind, string>> = {
  certificate: 'Verify certificate',
  report: 'Verify report'
};

/** A bundle (a certificate's or a release report's) is shown by its envelope (its proofs
 * are checked on Verify). */
export function renderEnvelope(document: unknown): Rendered {
  const envelope = isBundle(document) || isReportBundle(document) ? document.envelope : document;
  const view = readCertificate(envelope);
  if (isReportStatement(view.predicateType)) {
    return { kind: 'report', node: renderReport(readReport(view.predicateType, view.subject, view.predicate)) };
  }
  return { kind: 'certificate', node: renderCertificate(view) };
}
