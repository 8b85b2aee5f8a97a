"""Accelerate: Flight Recorder before ``Accelerator()`` creates the process group, dumps after.

    import desync.accelerate
    desync.accelerate.enable()                 # before Accelerator(): the recorder's settings
    accelerator = Accelerator()
    desync.accelerate.attach(accelerator)      # arms every rank's dump on failure, now

``Accelerator()`` starts the process group in its constructor (``PartialState``), so the
recorder's environment must be set before it. :func:`attach` arms the failure dumps at once
instead of waiting for :func:`desync.torch.enable`'s polling thread to notice the group, and
returns the settings. Under ``accelerate launch`` or ``torchrun``, an exception that ends a
rank dumps it and tells the other ranks to dump (through the launcher's TCPStore).
"""

from __future__ import annotations

import os
from typing import Any

from desync import torch as _recorder
from desync.torch import Settings


def enable(dump_dir: str | os.PathLike[str] | None = None, **enable_kwargs: Any) -> Settings:
    """:func:`desync.torch.enable`; call it before constructing the ``Accelerator``."""
    return _recorder.enable(dump_dir, **enable_kwargs)


def attach(accelerator: Any) -> Settings:
    """Arm the failure dumps for ``accelerator``'s process group (call after constructing it).

    A single-process accelerator (no distributed state) has nothing to arm; the settings are
    returned all the same.
    """
    settings = _recorder.settings()
    if settings is None:
        # Too late for the buffer size of the groups that exist, but dumps still work.
        settings = _recorder.enable()
    if getattr(accelerator, "num_processes", 1) > 1:
        _recorder.arm()
    return settings
