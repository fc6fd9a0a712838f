# replay-enclave-rotate — key custodian: rotation, rewrap and crypto-shredding.
#
# Rotate a tenant KEK, rewrap stored data keys to the newest version, raise
# min_decryption/min_encryption_version and trim old versions (which destroys every
# data key wrapped under them). It cannot decrypt, export, back up, create or delete
# keys, and cannot change a key's exportable/allow_plaintext_backup/deletion settings:
# config accepts the two minimum versions only. Rewrap returns ciphertext only.
#
# The "+" segment rules do not constrain the key-name prefix (ACL globs only end a
# path); they are scoped by the mount, which setup dedicates to the enclave.
path "transit/keys/+" {
  capabilities = ["read"]
}

path "transit/keys/+/rotate" {
  capabilities = ["update"]
}

path "transit/keys/+/config" {
  capabilities = ["update"]
  allowed_parameters = {
    "min_decryption_version" = []
    "min_encryption_version" = []
  }
}

path "transit/keys/+/trim" {
  capabilities        = ["update"]
  required_parameters = ["min_available_version"]
  allowed_parameters = {
    "min_available_version" = []
  }
}

path "transit/rewrap/replay-enclave-*" {
  capabilities        = ["update"]
  required_parameters = ["ciphertext", "context"]
  allowed_parameters = {
    "ciphertext" = []
    "context"    = []
  }
}

# The log key is the log's identity, the issuer key the certificates': rotating,
# re-configuring or trimming either would make everything signed before unverifiable
# with the key the home pinned. The rules above match them; these take them out.
path "transit/keys/replay-enclave-_log/rotate" {
  capabilities = ["deny"]
}

path "transit/keys/replay-enclave-_log/config" {
  capabilities = ["deny"]
}

path "transit/keys/replay-enclave-_log/trim" {
  capabilities = ["deny"]
}

path "transit/rewrap/replay-enclave-_log" {
  capabilities = ["deny"]
}

path "transit/keys/replay-enclave-_issuer/rotate" {
  capabilities = ["deny"]
}

path "transit/keys/replay-enclave-_issuer/config" {
  capabilities = ["deny"]
}

path "transit/keys/replay-enclave-_issuer/trim" {
  capabilities = ["deny"]
}

path "transit/rewrap/replay-enclave-_issuer" {
  capabilities = ["deny"]
}
