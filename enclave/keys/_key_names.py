"""The names of the two signing keys in the key server, after the key prefix.

Apart from the transit client so that a home with local keys can name them (its
issuer and log key files) without importing ``hvac`` and ``requests``.
"""

__all__ = ["ISSUER_KEY_NAME", "LOG_KEY_NAME", "SIGNING_KEY_NAMES"]

# "_" starts no tenant id, so no tenant's key can take these names
LOG_KEY_NAME = "_log"
ISSUER_KEY_NAME = "_issuer"
SIGNING_KEY_NAMES = {LOG_KEY_NAME: "log key", ISSUER_KEY_NAME: "issuer key"}
