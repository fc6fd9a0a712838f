# replay-enclave-broker-<tenant> — grant minting for ONE tenant, rendered by setup with the
# tenant's own key name in place of "replay-enclave-<tenant>" (never a glob: one tenant's
# broker gets 403 on every other tenant's key).
#
# Decrypt is allowed only response-wrapped (min/max_wrapping_ttl: an unwrapped call is
# refused with 403), so the broker never receives a plaintext data key: it receives a
# single-use wrapping token that the worker holding the job's lease redeems once. One
# ciphertext and one context per request; batch_input and every other parameter are
# refused. max_wrapping_ttl is the longest grant (and must not exceed the longest lease).
path "transit/decrypt/replay-enclave-<tenant>" {
  capabilities        = ["update"]
  min_wrapping_ttl    = "1s"
  max_wrapping_ttl    = "15m"
  required_parameters = ["ciphertext", "context"]
  allowed_parameters = {
    "ciphertext" = []
    "context"    = []
  }
}

# Admission binds an admitted audit to its specimen with an HMAC under the tenant's key
# (the HMAC key is separate material from the encryption key); the grant route checks
# it. A worker, holding no Vault credential, cannot forge one.
path "transit/hmac/replay-enclave-<tenant>" {
  capabilities        = ["update"]
  required_parameters = ["input"]
  allowed_parameters = {
    "input" = []
  }
}

path "transit/verify/replay-enclave-<tenant>" {
  capabilities        = ["update"]
  required_parameters = ["input", "hmac"]
  allowed_parameters = {
    "input" = []
    "hmac"  = []
  }
}
