# replay-enclave-broker — the governance plane (the service's admission path) that mints
# single-specimen grants. This base policy holds no tenant: it only lets the broker check
# a wrapping token's creation path and TTL. Every tenant it may serve adds its own
# replay-enclave-broker-<tenant> policy (broker-tenant.hcl, rendered by setup for exactly
# one tenant key: no glob spans tenants). Replay workers hold no Vault credential at all.
path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

# Checkpoints: the governance plane signs the ledger's Merkle tree with the log key, an
# Ed25519 key that never leaves transit ("_" starts no tenant id, so no tenant key has
# its name). Input only: no key_version (a checkpoint is signed by the key the home
# pinned, the latest), no prehash, no batch. Reading the key gives its public half.
path "transit/sign/replay-enclave-_log" {
  capabilities        = ["update"]
  required_parameters = ["input"]
  allowed_parameters = {
    "input" = []
  }
}

path "transit/keys/replay-enclave-_log" {
  capabilities = ["read"]
}

# Certificates and release reports: signed with the issuer key, an Ed25519 key that
# never leaves transit either, on the same terms (the home pins its public half).
path "transit/sign/replay-enclave-_issuer" {
  capabilities        = ["update"]
  required_parameters = ["input"]
  allowed_parameters = {
    "input" = []
  }
}

path "transit/keys/replay-enclave-_issuer" {
  capabilities = ["read"]
}

# Nothing else: no sys/policy, no auth/token/create, no revoke-accessor. An unused grant
# is revoked by its own wrapping token (auth/token/revoke-self), which needs no right
# here; unwrapping also authenticates with the wrapping token itself.
