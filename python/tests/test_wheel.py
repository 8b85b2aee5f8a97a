"""The torch-desync wheel, installed the way a user installs it: `pip install` into a fresh
venv (no torch), then the installed `desync` command on a shipped example.

scripts/test.sh builds the wheel (scripts/wheel.sh: maturin + zig, manylinux2014) and passes
its path in DESYNC_WHEEL. The binary inside must need no glibc symbol newer than 2.17 (what
manylinux2014 promises: RHEL/CentOS 7, Ubuntu 20.04 login nodes), and the wheel must stay
under 15 MB.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

WHEEL = os.environ.get("DESYNC_WHEEL")
MAX_WHEEL_BYTES = 15 * 1024 * 1024
GLIBC_MAX = (2, 17)

if not WHEEL:
    if os.environ.get("CI") == "true":
        raise RuntimeError("DESYNC_WHEEL is not set: scripts/test.sh builds the wheel first")
    pytest.skip("set DESYNC_WHEEL to a built wheel (scripts/test.sh does)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-index",
                    "--disable-pip-version-check", WHEEL], check=True)
    return venv


def test_wheel_name_size_and_contents() -> None:
    wheel = Path(WHEEL)
    # One wheel for every Python (the package is pure Python, the binary a plain executable),
    # tagged for glibc 2.17 under both spellings (maturin's order varies across releases).
    name, _, tags = wheel.name.removesuffix(".whl").partition("-py3-none-")
    assert re.fullmatch(r"torch_desync-[^-]+", name), wheel.name
    assert sorted(tags.split(".")) == ["manylinux2014_x86_64", "manylinux_2_17_x86_64"], wheel.name
    assert wheel.stat().st_size < MAX_WHEEL_BYTES, f"{wheel.stat().st_size} bytes"
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/scripts/desync") for n in names), names
    assert "desync/torch.py" in names and "desync/lightning.py" in names
    assert "desync/py.typed" in names
    # Test jobs and tests stay out of the package users install.
    assert not [n for n in names if "desync_jobs" in n or n.startswith("tests/")], names


def test_binary_needs_no_glibc_newer_than_2_17(installed: Path) -> None:
    exe = installed / "bin" / "desync"
    symbols = subprocess.run(["objdump", "-T", str(exe)], capture_output=True, text=True,
                             check=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", symbols)}
    assert versions, "no versioned glibc symbols found: is it dynamically linked?"
    assert max(versions) <= GLIBC_MAX, f"needs GLIBC_{'.'.join(map(str, max(versions)))}"
    # Stripped: no symbol table left.
    assert "no symbols" in subprocess.run(["nm", str(exe)], capture_output=True,
                                          text=True).stderr


def test_installed_command_analyzes_a_shipped_example(installed: Path) -> None:
    example = REPO / "tests" / "scenarios" / "early_stop"
    proc = subprocess.run([str(installed / "bin" / "desync"), "analyze", str(example / "dumps"),
                           "--source-root", str(example / "src"), "--format", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)["verdict"]
    expected = json.loads((example / "expected.json").read_text())
    assert verdict["category"] == expected["category"] == "divergence"
    assert verdict["culprit_ranks"] == expected["culprit_ranks"]


def test_python_side_finds_its_command(installed: Path) -> None:
    python = installed / "bin" / "python"
    out = subprocess.run([str(python), "-c", "import desync, desync.torch; print(desync.find_desync_bin())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(installed / "bin" / "desync")
    version = subprocess.run([str(python), "-m", "desync", "--version"], capture_output=True,
                             text=True, check=True).stdout
    assert version.startswith("desync ")
