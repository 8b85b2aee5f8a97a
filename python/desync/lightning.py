"""Lightning: a callback that turns Flight Recorder on and dumps every rank when the run fails.

    from desync.lightning import DesyncCallback
    trainer = Trainer(strategy="ddp", callbacks=[DesyncCallback()])

The callback is constructed before ``trainer.fit`` creates the process group, so its
:func:`desync.torch.enable` call sets the recorder's environment in time (in every process:
Lightning's script launcher re-runs the script per rank, and ``ddp_spawn`` children inherit the
environment and enable again in ``setup``). ``setup`` arms the failure dumps as soon as the
strategy has created the group; ``on_exception`` dumps this rank and tells the others to dump
(and waits a few seconds for them) before Lightning re-raises and the process ends. Lightning
does not kill the other ranks on such a failure: a rank stuck in data loading stays stuck
until the launcher's environment (torchrun, the scheduler) ends it; its dump is written by then.

Works with ``pytorch_lightning`` and with ``lightning.pytorch`` (whichever the script
imported; ``pytorch_lightning`` first when both are installed and neither is imported yet).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from desync import torch as _recorder


def _callback_base() -> type:
    for name in ("pytorch_lightning", "lightning.pytorch"):
        if name in sys.modules:
            return importlib.import_module(name).Callback
    for name in ("pytorch_lightning", "lightning.pytorch"):
        try:
            return importlib.import_module(name).Callback
        except ImportError:
            continue
    raise ImportError("desync.lightning needs pytorch_lightning or lightning installed")


class DesyncCallback(_callback_base()):  # type: ignore[misc]
    """Flight Recorder on, and every rank's dump when a rank fails. Arguments go to
    :func:`desync.torch.enable` (``dump_dir``, ``buffer_size``, ``cpp_stacks``, ...)."""

    def __init__(self, dump_dir: str | os.PathLike[str] | None = None, **enable_kwargs: Any) -> None:
        super().__init__()
        self._dump_dir = dump_dir
        self._enable_kwargs = enable_kwargs
        self.settings = _recorder.enable(dump_dir, **enable_kwargs)

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        # In a ddp_spawn child this is the first call in the process (the environment came
        # from the parent); elsewhere it returns the settings from __init__.
        self.settings = _recorder.enable(self._dump_dir, **self._enable_kwargs)
        _recorder.arm()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        _recorder.on_exception(exception)
