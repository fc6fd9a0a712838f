# replay-enclave-capture — agent runtimes sealing specimens.
#
# Only: ask transit for a fresh data key (plaintext + wrapped) under a tenant KEK,
# always with a derivation context ("tenant/specimen", base64) and nothing else.
# No decrypt, no rewrap, no key read/export/backup, no default policy (the role sets
# token_no_default_policy), so a stolen capture token cannot read back any specimen.
path "transit/datakey/plaintext/replay-enclave-*" {
  capabilities        = ["update"]
  required_parameters = ["context"]
  allowed_parameters = {
    "context" = []
  }
}

# The glob above also names the signing keys (replay-enclave-_log, -_issuer): no data
# key from either.
path "transit/datakey/plaintext/replay-enclave-_log" {
  capabilities = ["deny"]
}

path "transit/datakey/plaintext/replay-enclave-_issuer" {
  capabilities = ["deny"]
}
