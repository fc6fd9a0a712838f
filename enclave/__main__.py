"""``python -m enclave``: the ``replay-enclave`` command."""

from enclave.cli import main

main()
