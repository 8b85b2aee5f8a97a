"""The real-bug corpus for `desync lint` (crates/desync_lint/tests/real_bugs/): every bug is
well-formed (issue URL, summary, the buggy line marked in buggy.py, a fixed.py), and the score of
the release binary does not fall below the recorded one (docs/lint.md, "Real-bug corpus").

The ratchet numbers are today's score; raise them as the rules improve, never lower them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, desync_bin

SCORER = REPO / "scripts" / "lint_real_bugs.py"
MIN_FOUND = 20  # bugs found on their line
MIN_QUIET = 20  # fixed versions with no finding


def test_corpus_is_well_formed():
    proc = subprocess.run([sys.executable, str(SCORER), "--check"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[0]) >= 12, proc.stdout


def test_score_does_not_regress():
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe}"
    proc = subprocess.run([sys.executable, str(SCORER), "--bin", str(exe), "--json"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    score = json.loads(proc.stdout)
    assert score["total"] >= 12
    lost = [b["name"] for b in score["bugs"] if not b["quiet"]]
    assert score["quiet"] >= MIN_QUIET, f"fixed versions now flagged: {lost}"
    assert score["found"] >= MIN_FOUND, json.dumps(score["bugs"], indent=1)[:4000]
