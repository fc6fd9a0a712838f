/**
 * The predicate types the browser's verifier knows (``ledger.certificates``
 * ``PREDICATE_TYPE``, ``PREDICATE_TYPE_V2`` and ``PREDICATE_TYPE_V1``), in a module of
 * their own so that every part of the predicate check can name them without importing
 * the others.
 */

export const PREDICATE_TYPE = 'https://replay-enclave.dev/certificate/v3';
export const PREDICATE_TYPE_V2 = 'https://replay-enclave.dev/certificate/v2';
export const PREDICATE_TYPE_V1 = 'https://replay-enclave.dev/certificate/v1';
