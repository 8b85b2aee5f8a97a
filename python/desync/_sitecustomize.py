"""``desync run`` writes this file as ``sitecustomize.py`` on the job's PYTHONPATH.

Python imports ``sitecustomize`` at start-up in every interpreter of the job. In a training
rank (torchrun sets ``RANK``), it calls :func:`desync.torch.enable` so that the ranks dump their
Flight Recorder, and rewrite it for ``desync run`` to watch, without any change to the
training script. Then it runs the ``sitecustomize`` this file shadows, if there is one.
"""

import os
import sys


def _desync_enable() -> None:
    if os.environ.get("DESYNC_AUTO_ENABLE") != "1" or "RANK" not in os.environ:
        return
    try:
        import desync.torch

        desync.torch.enable()
    except Exception as exc:  # never stop a job from starting
        sys.stderr.write(f"[desync] could not enable the flight recorder: {exc}\n")


def _run_shadowed() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.stderr.write(f"[desync] the job's own sitecustomize failed: {exc}\n")


_desync_enable()
_run_shadowed()
