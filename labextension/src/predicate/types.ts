/**
 * The predicate types the browser's verifier knows (``ledger.certificates``
 * ``PREDICATE_TYPE`` and ``PREDICATE_TYPE_V1``), in a module of their own so that every
 * part of the predicate check can name them without importing the others.
 */

export const PREDICATE_TYPE = 'https://replay-enclave.dev/certificate/v2';
export const PREDICATE_TYPE_V1 = 'https://replay-enclave.dev/certificate/v1';
