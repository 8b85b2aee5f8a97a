"""Build and load the `_abort_dump` C extension on the fly.

The extension is compiled with the system C compiler against the running
interpreter's headers (``sysconfig``) and cached by a hash of its source and the
interpreter ABI, so concurrent ranks share one build. The cache lives outside
the repository (``$DESYNC_JOBS_CACHE`` or ``<tmp>/desync-jobs/build``).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("abort_dump.c")
MODULE_NAME = "_abort_dump"


class BuildError(RuntimeError):
    """The C compiler or the Python headers are not usable."""


def cache_dir() -> Path:
    env = os.environ.get("DESYNC_JOBS_CACHE")
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / "desync-jobs" / "build"


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def built_path() -> Path:
    digest = hashlib.sha256()
    digest.update(SOURCE.read_bytes())
    digest.update(sys.version.encode())
    digest.update(_ext_suffix().encode())
    return cache_dir() / digest.hexdigest()[:16] / f"{MODULE_NAME}{_ext_suffix()}"


def build(force: bool = False) -> Path:
    """Compile the extension if the cached build is missing; return its path."""
    target = built_path()
    if target.exists() and not force:
        return target
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise BuildError("no C compiler found (set CC or install gcc)")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise BuildError(f"Python.h not found under {include}")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the target and rename: ranks racing to build never load a
    # half-written shared object.
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=_ext_suffix(), dir=target.parent)
    os.close(fd)
    cmd = [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-pthread", f"-I{include}",
           str(SOURCE), "-o", tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise BuildError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    os.replace(tmp, target)
    return target


def load() -> ModuleType:
    """Import the extension, building it first if needed."""
    if MODULE_NAME in sys.modules:
        return sys.modules[MODULE_NAME]
    path = build()
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[MODULE_NAME] = module
    return module


if __name__ == "__main__":
    print(build(force="--force" in sys.argv))
