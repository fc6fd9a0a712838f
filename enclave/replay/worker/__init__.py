"""What runs inside the sandbox wall, in the replay worker: the handler the supervisor
starts (``_entry``), each run's fresh process (``_fresh_run``), the replay engine and
its tracked responses, the substitute fidelity check, the served-by marks and what the
worker sends back (``_outgoing``: one run's result and one seed's summary).

Nothing here imports a supervisor-side module; the data both sides share (``_model``,
``_errors``, ``_compare``, ``_quantize``, ``_decisions``, ``_results``) lives one folder
up (tests/project/test_sandbox_wall.py checks both).
"""
