/**
 * The certificate predicate check of the browser's verifier: the predicate matches its
 * version's JSON Schema (``schema``) and rules (``rulesV1``, ``rulesV2``, ``rulesV3``), exactly as
 * ``ledger.certificates.predicate_problems`` judges it (a parity corpus proves it:
 * ``test/predicate-parity.test.ts``). Problems read ``location: rule``, never a value.
 * ``Unevaluable`` is thrown where the Python rules raise.
 */

import { ruleProblems } from './rulesV1';
import { ruleProblemsV2 } from './rulesV2';
import { ruleProblemsV3 } from './rulesV3';
import { schemaProblems } from './schema';
import { PREDICATE_TYPE, PREDICATE_TYPE_V1, PREDICATE_TYPE_V2 } from './types';

export { finding } from './finding';
export { Unevaluable } from './numbers';
export { PREDICATE_TYPE, PREDICATE_TYPE_V1, PREDICATE_TYPE_V2 } from './types';

const RULES: Record<string, (p: Record<string, unknown>) => string[]> = {
  [PREDICATE_TYPE]: ruleProblemsV3,
  [PREDICATE_TYPE_V2]: ruleProblemsV2,
  [PREDICATE_TYPE_V1]: p => ruleProblems(p)
};

/** Every schema violation and broken rule of ``predicate`` under ``predicateType``. */
export function predicateProblems(predicate: unknown, predicateType: string): string[] {
  if (!Object.hasOwn(RULES, predicateType)) {
    throw new Error('unknown predicate type');
  }
  const problems = schemaProblems(predicate, predicateType);
  if (problems.length > 0) {
    return problems;
  }
  return RULES[predicateType](predicate as Record<string, unknown>);
}
