"""Hostile and partial input (issue 17): every class `scripts/make_hostile.py` writes, through
`analyze` (text and JSON), `summarize`, `report`, `export`, `lint` and `mcp`, each run under a
time and memory cap. Whatever the input, desync exits 0, 1 or 2 (never a signal, never a
panic), and nothing it prints or writes holds a byte of a file outside the roots it was given:
a canary file with a unique secret sits next to the cases and must never show up.
"""

from __future__ import annotations

import json
import os
import resource
import time
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, desync_bin

pytestmark = pytest.mark.desync

TIME_CAP_S = 60
MEMORY_CAP = 4 << 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("hostile")
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_hostile.py"), str(out)],
                   check=True, capture_output=True, timeout=300)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["out"] = out
    passwd = Path("/etc/passwd").read_text(errors="replace").splitlines()
    manifest["forbidden"] = [manifest["canary"]] + [line for line in passwd[:3] if len(line) > 8]
    return manifest


def run_capped(args: list[str], cwd: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Runs desync under the caps; a run past the time cap comes back with exit code None."""
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    try:
        return subprocess.run([str(exe), *args], cwd=cwd, input=stdin, capture_output=True,
                              timeout=TIME_CAP_S, preexec_fn=_cap_memory, check=False,
                              env={**os.environ, "NO_COLOR": ""})
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, None, e.output or b"", e.stderr or b"")


def run_mcp_in_phases(cwd: str, phases: list[list[dict]]):
    """`desync mcp` under the caps; each phase's requests are sent once every request of the
    phase before has been answered. Returns (completed process, answers by id)."""
    exe = desync_bin()
    proc = subprocess.Popen([str(exe), "mcp"], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_cap_memory, env={**os.environ, "NO_COLOR": ""})
    deadline = time.monotonic() + TIME_CAP_S
    answers: dict = {}
    out_lines: list[bytes] = []
    for phase in phases[:-1]:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in phase).encode())
        proc.stdin.flush()
        wanted = {r["id"] for r in phase if "id" in r}
        while not wanted <= set(answers) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            out_lines.append(line)
            msg = json.loads(line)
            if "id" in msg:
                answers[msg["id"]] = msg
    last = "".join(json.dumps(r) + "\n" for r in phases[-1]).encode()
    try:
        out, err = proc.communicate(last, timeout=max(1.0, deadline - time.monotonic()))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        code = None
    for line in out.decode().splitlines():
        msg = json.loads(line)
        if "id" in msg:
            answers[msg["id"]] = msg
    stdout = b"".join(out_lines) + out
    return subprocess.CompletedProcess(proc.args, code, stdout, err), answers


def check_ran_well(proc: subprocess.CompletedProcess, what: str, forbidden: list[str],
                   files: list[Path] = ()) -> None:
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode is not None, f"{what}: ran past {TIME_CAP_S} s"
    assert proc.returncode in (0, 1, 2), (
        f"{what}: exit {proc.returncode} (a negative code is a signal)\n{err[-3000:]}")
    assert "panicked" not in err, f"{what}: panic\n{err[-3000:]}"
    outputs = [proc.stdout, proc.stderr] + [f.read_bytes() for f in files if f.is_file()]
    for secret in forbidden:
        for data in outputs:
            assert secret.encode() not in data, f"{what}: output holds {secret!r} from outside the roots"


COMMANDS = ["analyze-text", "analyze-json", "analyze-color", "summarize", "report", "export"]


def run_command(command: str, case: dict, manifest: dict, tmp: Path) -> tuple[subprocess.CompletedProcess, list[Path]]:
    path, extra, cwd = case["path"], case["args"], manifest["cwd"]
    if command == "analyze-text":
        return run_capped(["analyze", path, "--color", "never", *extra], cwd), []
    if command == "analyze-color":
        return run_capped(["analyze", path, "--color", "always", *extra], cwd), []
    if command == "analyze-json":
        return run_capped(["analyze", path, "--format", "json", *extra], cwd), []
    if command == "summarize":
        out = tmp / "summaries"
        proc = run_capped(["summarize", path, "-o", str(out), "-q"], cwd)
        return proc, sorted(out.glob("*")) if out.is_dir() else []
    if command == "report":
        out = tmp / "report.html"
        return run_capped(["report", path, "-o", str(out), *extra], cwd), [out]
    if command == "export":
        out = tmp / "trace.json"
        return run_capped(["export", path, "--perfetto", str(out)], cwd), [out]
    raise AssertionError(command)


def test_every_hostile_input_ends_well_in_every_command(hostile, tmp_path):
    failures = []
    for case in hostile["cases"]:
        commands = ["lint"] if case.get("lint") else COMMANDS
        for command in commands:
            what = f"{case['name']} / {command}"
            work = tmp_path / case["name"] / command
            work.mkdir(parents=True)
            if command == "lint":
                proc, files = run_capped(["lint", case["path"], "--format", "json"], hostile["cwd"]), []
            else:
                proc, files = run_command(command, case, hostile, work)
            try:
                check_ran_well(proc, what, hostile["forbidden"], files)
                check_expectations(case, command, proc)
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, f"{len(failures)} failure(s):\n" + "\n\n".join(failures)


def check_expectations(case: dict, command: str, proc: subprocess.CompletedProcess) -> None:
    what = f"{case['name']} / {command}"
    err = proc.stderr.decode(errors="replace")
    if case.get("refused") and command.startswith("analyze"):
        assert proc.returncode == 2, f"{what}: a non-regular PATH must be refused (exit 2), got {proc.returncode}"
        assert "not a regular file" in err, f"{what}: the refusal must say why\n{err}"
    if command == "analyze-json" and case.get("unreadable"):
        assert proc.returncode == 2 and "could be read" in err, f"{what}: exit {proc.returncode}\n{err[-2000:]}"
    if command == "analyze-json" and not case.get("refused") and not case.get("unreadable"):
        assert proc.returncode in (0, 1), f"{what}: exit {proc.returncode}\n{err[-2000:]}"
        report = json.loads(proc.stdout)
        verdict = report["verdict"]
        if case.get("never_healthy"):
            assert proc.returncode == 1 and verdict["category"] != "healthy", (
                f"{what}: a partial set read {verdict['category']}")
            missing = report["input"]["missing_ranks"]
            assert missing, f"{what}: missing ranks not named"
            assert all(str(r) in verdict["headline"] or r in verdict["culprit_ranks"]
                       for r in missing), f"{what}: {missing} not named in {verdict}"
        if case.get("no_crash_category"):
            assert verdict["category"] != "crash", f"{what}: one bad field lost a whole rank: {verdict}"
        if case.get("stale_source"):
            code = report["code"]
            assert code is not None and code["branch"] is None, f"{what}: a branch from a wrong root: {code}"
            text = json.dumps(report["warnings"]) + code["explanation"]
            assert "differs from what ran" in text, f"{what}: the mismatch is not said: {text[:2000]}"
    if case.get("escapes") and command == "analyze-text":
        assert b"\x1b" not in proc.stdout, f"{what}: raw ESC in text output without colour"
    if case.get("escapes") and command.startswith("analyze"):
        for bad in [b"\x07", b"\r", b"\x9b", b"\x1b]", b"\x1b[2J", b"\x1b[H", b"\x00"]:
            assert bad not in proc.stdout, f"{what}: raw {bad!r} from a dump reached the terminal"


def test_mcp_never_reads_outside_the_roots_and_never_blocks(hostile):
    """The MCP server over stdio: the `source` tool refuses files outside the handle's roots
    (and without a handle, everything), a FIFO load is refused at once, many loads stay
    bounded, handles can be released, and the server answers after each."""
    requests = []

    def call(i, name, args):
        requests.append({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                         "params": {"name": name, "arguments": args}})

    requests.append({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
    requests.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    leak_root = Path(hostile["out"]) / "cases" / "leak" / "src"
    leak_dumps = next(c for c in hostile["cases"] if c["name"] == "leak_0")["path"]
    call(1, "load_dumps", {"path": leak_dumps, "source_root": str(leak_root)})
    call(2, "source", {"handle": "h1", "file": hostile["canary_path"], "line": 1})
    call(3, "source", {"file": hostile["canary_path"], "line": 1})
    call(4, "source", {"file": "/etc/passwd", "line": 1})
    call(5, "source", {"handle": "h1", "file": "../../outside/train.py", "line": 1})
    call(6, "source", {"handle": "h1", "file": "/proc/self/environ", "line": 1})
    call(7, "source", {"handle": "h1", "file": "escape.py", "line": 1})
    call(8, "compare_stacks", {"handle": "h1"})
    fifo = next(c for c in hostile["cases"] if c["name"] == "fifo_as_path")["path"]
    call(9, "load_dumps", {"path": fifo})
    call(10, "load_dumps", {"path": fifo})
    call(11, "load_dumps", {"path": "/dev/zero"})
    for i in range(12, 52):
        call(i, "load_dumps", {"path": leak_dumps, "source_root": str(leak_root)})
    call(52, "release", {"handle": "h1"})
    call(53, "verdict", {"handle": "h1"})
    call(54, "verdict", {"handle": "h2"})
    for case in hostile["cases"]:
        if not case.get("lint") and not case.get("refused"):
            args = {"path": case["path"]}
            if "--source-root" in case["args"]:
                args["source_root"] = case["args"][case["args"].index("--source-root") + 1]
            call(100 + len(requests), "load_dumps", args)
    call(9999, "verdict", {"handle": "h2"})
    # A client uses a handle after load_dumps answered: the server runs calls concurrently,
    # so the first load is awaited before the calls that use h1 are sent.
    first, rest = requests[:3], requests[3:]
    proc, answers = run_mcp_in_phases(hostile["cwd"], [first, rest])
    check_ran_well(proc, "mcp", hostile["forbidden"])
    ids = {r["id"] for r in requests if "id" in r}
    assert ids <= set(answers), f"unanswered: {sorted(ids - set(answers))}"

    def is_error(i):
        a = answers[i]
        return "error" in a or a["result"].get("isError")

    def text(i):
        a = answers[i]
        return json.dumps(a.get("error")) if "error" in a else "".join(
            c.get("text", "") for c in a["result"]["content"])

    assert not is_error(1), text(1)
    # Without a handle nothing is read. With one, a path outside the roots is refused, or
    # (like any frame path) resolved by its suffix to the file inside the root: never the
    # file it names outside.
    for i in (3, 4):
        assert is_error(i), f"source call {i} read without a handle: {text(i)[:500]}"
    for i in (2, 3, 4, 5, 6, 7):
        if is_error(i):
            assert "outside" in text(i) or "not found" in text(i) or "handle" in text(i), text(i)
        else:
            assert hostile["canary"] not in text(i), f"source call {i} read outside the roots"
            inside = (leak_root / "train.py").read_text().splitlines()[0]
            assert json.loads(text(i))["lines"][0]["text"] == inside, text(i)[:500]
    for i in (9, 10, 11):
        assert is_error(i) and "not a regular file" in text(i), text(i)
    assert not is_error(52), text(52)
    assert is_error(53), "a released handle still answers"
    assert not is_error(9999) or "unknown handle" in text(9999), text(9999)
