"""`desync analyze s3://...` end to end against a real S3-compatible server (moto, server mode).

Starts `moto.server` on a free local port, uploads committed scenarios' dumps, and checks that
the verdict read from the bucket is the one read from the directory. Also: a missing bucket and
an empty prefix are errors (exit 2) that say so, and a corrupt object is a warning, not a
failure. Credentials and the endpoint reach desync through the standard AWS_* variables only.

gs:// has no local server without a Go binary (fake-gcs-server); it is covered by the Rust unit
tests of URL parsing and client configuration in crates/desync_remote.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import SCENARIO_DIR, desync_bin, run_desync

pytest.importorskip("moto")
boto3 = pytest.importorskip("boto3")

pytestmark = pytest.mark.desync

BUCKET = "fr-dumps"
SCENARIOS = ["straggler", "extra_collective", "nccl_h100_hang", "json_extra_collective"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint():
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    pytest.fail(f"moto server did not start: {server.stderr.read()[-2000:]}")
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def s3(endpoint):
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)
    for name in SCENARIOS:
        _upload(client, SCENARIO_DIR / name / "dumps", f"jobs/{name}/")
    return client


def _upload(client, directory: Path, prefix: str) -> None:
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            key = prefix + path.relative_to(directory).as_posix()
            client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())


def _env(endpoint: str) -> dict[str, str]:
    """This process's environment without any AWS_*/GOOGLE_* of the machine, plus moto's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_"))}
    env.update({
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
    })
    # A machine-wide HTTP(S)_PROXY must not capture requests to the local server.
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    return env


def _analyze(url: str, endpoint: str) -> subprocess.CompletedProcess:
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    return subprocess.run([str(exe), "analyze", url, "--format", "json"], capture_output=True,
                          text=True, timeout=120, check=False, env=_env(endpoint))


def _verdict(report: dict) -> dict:
    v = report["verdict"]
    return {"category": v["category"], "culprit_ranks": v["culprit_ranks"],
            "process_group": v["process_group"], "seq": v["collective_seq_id"],
            "ranks_loaded": report["input"]["ranks_loaded"]}


@pytest.mark.parametrize("name", SCENARIOS)
def test_bucket_verdict_matches_directory(s3, endpoint, name):
    local_code, local, _ = run_desync(SCENARIO_DIR / name / "dumps")
    proc = _analyze(f"s3://{BUCKET}/jobs/{name}/", endpoint)
    assert proc.returncode == local_code, proc.stderr
    remote = json.loads(proc.stdout)
    assert _verdict(remote) == _verdict(local)
    assert remote["input"]["path"] == f"s3://{BUCKET}/jobs/{name}/"
    assert remote["input"]["files"] == local["input"]["files"]


def test_missing_bucket_is_an_error(s3, endpoint):
    proc = _analyze("s3://no-such-bucket/jobs/", endpoint)
    assert proc.returncode == 2, proc.stdout
    assert "bucket `no-such-bucket` does not exist" in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_empty_prefix_says_so(s3, endpoint):
    proc = _analyze(f"s3://{BUCKET}/jobs/nothing-here/", endpoint)
    assert proc.returncode == 2
    assert f"no objects under s3://{BUCKET}/jobs/nothing-here/" in proc.stderr, proc.stderr


def test_prefix_without_dumps_says_so(s3, endpoint):
    s3.put_object(Bucket=BUCKET, Key="notes/README.txt", Body=b"not a dump")
    proc = _analyze(f"s3://{BUCKET}/notes/", endpoint)
    assert proc.returncode == 2
    assert "no Flight Recorder dumps in s3://fr-dumps/notes/" in proc.stderr, proc.stderr


def test_corrupt_object_is_a_warning(s3, endpoint):
    name = "straggler"
    _upload(s3, SCENARIO_DIR / name / "dumps", "corrupt/")
    # A second, broken dump for rank 1 (a re-dump cut short): the good one must still count.
    s3.put_object(Bucket=BUCKET, Key="corrupt/gloo_trace_rank_1.pkl", Body=b"\x80\x04\x95truncated")
    _, local, _ = run_desync(SCENARIO_DIR / name / "dumps")
    proc = _analyze(f"s3://{BUCKET}/corrupt/", endpoint)
    assert proc.returncode in (0, 1), proc.stderr
    remote = json.loads(proc.stdout)
    assert _verdict(remote) == _verdict(local)
    unreadable = [w for w in remote["warnings"] if w["kind"] == "unreadable"]
    assert [(w["path"], w["rank"]) for w in unreadable] == [
        (f"s3://{BUCKET}/corrupt/gloo_trace_rank_1.pkl", 1)], remote["warnings"]
