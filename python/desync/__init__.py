"""desync: find why a distributed PyTorch job hung, from its Flight Recorder dumps.

The ``desync`` command (a Rust binary) is installed by this package's wheel next to the
Python interpreter's scripts. This package adds the side that runs inside a training job:

- :func:`desync.torch.enable` configures Flight Recorder before the process group starts and,
  for Gloo (which never dumps by itself), dumps every rank when a collective fails;
- :class:`desync.lightning.DesyncCallback` and :func:`desync.accelerate.attach` do the same
  from the frameworks' own extension points.

``python -m desync ARGS`` runs the command (e.g. ``python -m desync run -- torchrun ...``).
The Python side imports torch lazily: ``import desync`` is cheap and works without torch.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["__version__", "find_desync_bin"]

try:
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("torch-desync")
    except PackageNotFoundError:  # running from a source checkout
        __version__ = "0+unknown"
except ImportError:  # pragma: no cover - Python < 3.8
    __version__ = "0+unknown"


def find_desync_bin() -> str:
    """Path of the ``desync`` command: the one this package installed, else the one on PATH.

    Raises FileNotFoundError when there is none (a source checkout without a build).
    """
    name = "desync" + (".exe" if sys.platform == "win32" else "")
    # The wheel installs the binary into the scripts directory of the environment it was
    # installed into; a `pip install --user` puts it under the user scheme's scripts.
    candidates = [Path(sysconfig.get_path("scripts")) / name]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        candidates.append(Path(sysconfig.get_path("scripts", user_scheme)) / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        "the desync command was not found (pip install torch-desync, or build it with "
        "`cargo install --path crates/desync --locked`)"
    )
