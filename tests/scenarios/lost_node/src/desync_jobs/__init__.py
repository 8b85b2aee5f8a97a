"""Real multi-process PyTorch jobs that reproduce distributed desync bugs.

- ``harness``: in-rank setup (Gloo process group, Flight Recorder dump on
  failure / on a peer's signal / on SIGABRT / at the end).
- ``run``: the launcher (``python python/desync_jobs/run.py <scenario> --out DIR``).
- ``scenarios``: the training scripts, one bug each, and their registry.
- ``expected``: the designed outcome of each scenario.
- ``frtrace``: run and parse PyTorch's ``torchfrtrace`` for parity checks.
- ``native``: builds the C SIGABRT hook (``abort_dump.c``).
"""
