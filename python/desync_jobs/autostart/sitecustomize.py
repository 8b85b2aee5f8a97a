"""Started by the interpreter (``site``) in every rank of a framework job.

The launcher puts this folder on ``PYTHONPATH`` for jobs whose framework calls
``init_process_group`` itself, and sets ``DESYNC_JOBS_AUTO=1``; the Flight
Recorder dumps are then wired up once the process group exists, with no line of
the training project touching this harness (its stacks stay those of the real
project).
"""

import os

if os.environ.get("DESYNC_JOBS_AUTO") == "1":
    from desync_jobs import harness

    harness.install_when_initialized()
