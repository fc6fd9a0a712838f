"""``python -m enclave``: the ``replay-enclave`` command."""

from enclave._console import main

main()
