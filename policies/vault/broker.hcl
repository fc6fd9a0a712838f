# replay-enclave-broker — the supervisor that issues single-specimen grants.
#
# Decrypt is allowed only response-wrapped (min/max_wrapping_ttl: an unwrapped call is
# refused with 403), so the broker never receives a plaintext data key: it receives a
# single-use wrapping token that the job redeems once. One ciphertext and one context
# per request; batch_input and every other parameter are refused. max_wrapping_ttl is
# the longest grant (and must not exceed the longest job lease).
path "transit/decrypt/replay-enclave-*" {
  capabilities        = ["update"]
  min_wrapping_ttl    = "1s"
  max_wrapping_ttl    = "15m"
  required_parameters = ["ciphertext", "context"]
  allowed_parameters = {
    "ciphertext" = []
    "context"    = []
  }
}

# Check a wrapping token's creation path and TTL before unwrapping it.
path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

# Nothing else: no sys/policy, no auth/token/create, no revoke-accessor. An unused grant
# is revoked by its own wrapping token (auth/token/revoke-self), which needs no right
# here; unwrapping also authenticates with the wrapping token itself.
