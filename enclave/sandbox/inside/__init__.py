"""What runs inside the sandbox wall, in the worker process: its start-up (``_worker``),
the template that forks a process per run (``_template``) and a zygote's spawner loop
(``_spawner``), the channel a handler answers through, the code cache, the audit-hook
tripwire and the Landlock and seccomp loaders (which the supervisor also reads to check
what was loaded).

Nothing here imports a supervisor-side module: what both sides share is
``enclave.sandbox._wire`` (tests/project/test_sandbox_wall.py checks both).
"""
