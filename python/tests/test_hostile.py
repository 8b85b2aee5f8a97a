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
import signal
import time
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO, desync_bin

pytestmark = pytest.mark.desync

# What "ends well" bounds is the work: CPU seconds (the kernel stops a run past them with
# SIGXCPU, a signal check_ran_well reports). Wall time is only the backstop for a run that
# blocks: on a 2-core machine shared with a build and another test shard, a run of 6 CPU
# seconds took over 60 s of wall time.
TIME_CAP_S = 60
WALL_CAP_S = 300
MEMORY_CAP = 4 << 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CPU, (TIME_CAP_S, TIME_CAP_S))


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
    """Runs desync under the caps; a run blocked past the wall cap comes back with exit code None."""
    exe = desync_bin()
    assert exe.exists(), f"desync binary not found at {exe} (build it or set DESYNC_BIN)"
    try:
        # The cap comes from prlimit(1), not a preexec_fn: the main test runs these from two
        # threads, and a preexec_fn is not safe to run after fork in a threaded process.
        return subprocess.run(["prlimit", f"--as={MEMORY_CAP}", f"--cpu={TIME_CAP_S}", "--",
                               str(exe), *args], cwd=cwd,
                              input=stdin, capture_output=True, timeout=WALL_CAP_S, check=False,
                              env={**os.environ, "NO_COLOR": ""})
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, None, e.output or b"", e.stderr or b"")


def run_mcp_in_phases(cwd: str, phases: list[list[dict]], args: list[str] = (),
                      env: dict | None = None):
    """`desync mcp ARGS` under the caps; each phase's requests are sent once every request of
    the phase before has been answered, and stdin is closed (MCP's shutdown) once the last
    phase's are: like a real client, which does not shut the server down with calls in flight
    (the server then drops them; on a loaded machine a queued load was still waiting for its
    slot). Returns (completed process, answers by id)."""
    exe = desync_bin()
    # stderr goes to a file: only stdout is read while calls are in flight, and a full stderr
    # pipe would block the server.
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen([str(exe), "mcp", *args], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=errors,
                            preexec_fn=_cap_memory,
                            env={**os.environ, "NO_COLOR": "", **(env or {})})
    deadline = time.monotonic() + WALL_CAP_S
    # A server that blocks is killed at the deadline, which ends the reads below.
    killer = threading.Timer(WALL_CAP_S, proc.kill)
    killer.start()
    answers: dict = {}
    out_lines: list[bytes] = []
    for phase in phases:
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
    try:
        out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        code = None if proc.returncode == -signal.SIGKILL else proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        code = None
    finally:
        killer.cancel()
    errors.seek(0)
    err = errors.read()
    errors.close()
    for line in out.decode().splitlines():
        msg = json.loads(line)
        if "id" in msg:
            answers[msg["id"]] = msg
    stdout = b"".join(out_lines) + out
    return subprocess.CompletedProcess(proc.args, code, stdout, err), answers


def check_ran_well(proc: subprocess.CompletedProcess, what: str, forbidden: list[str],
                   files: list[Path] = ()) -> None:
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode is not None, f"{what}: blocked past {WALL_CAP_S} s of wall time"
    assert proc.returncode != -signal.SIGXCPU, f"{what}: ran past {TIME_CAP_S} CPU seconds"
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
    runs = [(case, command) for case in hostile["cases"]
            for command in (["lint"] if case.get("lint") else COMMANDS)]

    def run(case: dict, command: str):
        work = tmp_path / case["name"] / command
        work.mkdir(parents=True)
        if command == "lint":
            return run_capped(["lint", case["path"], "--format", "json"], hostile["cwd"]), []
        return run_command(command, case, hostile, work)

    # Two at a time: most runs are one short single-threaded process, and CI has two cores.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda r: run(*r), runs))
    failures = []
    for (case, command), (proc, files) in zip(runs, results):
        what = f"{case['name']} / {command}"
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
    cases = str(Path(hostile["out"]) / "cases")
    allow = ["--allow-root", cases, "--allow-root", str(REPO / "tests" / "scenarios")]
    proc, answers = run_mcp_in_phases(hostile["cwd"], [first, rest], allow)
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
            assert any(why in text(i) for why in (
                "outside", "not found", "handle", "not a Python source file")), text(i)
        else:
            assert hostile["canary"] not in text(i), f"source call {i} read outside the roots"
            inside = (leak_root / "train.py").read_text().splitlines()[0]
            assert json.loads(text(i))["lines"][0]["text"] == inside, text(i)[:500]
    for i in (9, 10):
        assert is_error(i) and "not a regular file" in text(i), text(i)
    assert is_error(11) and "outside the directories this server allows" in text(11), text(11)
    assert not is_error(52), text(52)
    assert is_error(53), "a released handle still answers"
    assert not is_error(9999) or "unknown handle" in text(9999), text(9999)


# Issue 43: a crafted dump's frames name the user's secrets, with the code object names that
# used to skip the check that the local file is what ran (`<module>`, `<lambda>`).
HOME_SECRETS = [".aws/credentials", ".ssh/id_rsa", ".netrc", ".git-credentials", ".env"]
FRAME_NAMES = ["<module>", "<lambda>", "<listcomp>", "<genexpr>", "main"]


def _frames(home: Path, secrets: list[str]) -> list[dict]:
    frames = []
    for i, secret in enumerate(secrets):
        for name in FRAME_NAMES:
            for filename in (str(home / secret), secret):  # absolute, and relative to the cwd
                frames.append({"name": name, "filename": filename, "line": 1 + i % 2})
    for filename in ("/etc/shadow", "/etc/passwd", "/proc/self/environ", "notes.py",
                     str(home / "notes.py")):
        frames.append({"name": "<module>", "filename": filename, "line": 1})
    return frames


def _entry(seq: int, op: str, state: str, frames: list[dict], size: int = 4) -> dict:
    return {"record_id": seq - 1, "pg_id": 0, "process_group": ["0", "default_pg"],
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "is_p2p": False,
            "profiling_name": f"gloo:{op}", "time_created_ns": 10**18 + seq * 10**6,
            "input_sizes": [[size]], "output_sizes": [[size]], "input_dtypes": ["Float"],
            "output_dtypes": ["Float"], "state": state, "retired": state == "completed",
            "timeout_ms": 6000, "frames": frames}


@pytest.fixture()
def fake_home(tmp_path) -> dict:
    """A HOME holding secrets (each with a unique canary) and a Python-looking secret at its
    top, a job whose two ranks part at seq 2 with frames naming those secrets, and a dump
    directory whose rank-1 file is a symlink to `~/.ssh/id_rsa`."""
    canary = f"DESYNC-CANARY-{os.getpid()}-{time.time_ns()}"
    home = tmp_path / "home"
    for secret in HOME_SECRETS:
        path = home / secret
        path.parent.mkdir(parents=True, exist_ok=True)
        # Python-shaped on purpose: `key = value` lines parse, so only where the file is and
        # what it is named can keep it out.
        path.write_text(f"aws_secret = '{canary}'\ntoken = '{canary}'\n")
    (home / "notes.py").write_text(f"TOKEN = '{canary}'\n")
    job = tmp_path / "job"
    half = len(HOME_SECRETS) // 2

    def write_set(name: str, sides: list[tuple[str, int, list[dict]]]) -> Path:
        dumps = job / name
        dumps.mkdir(parents=True)
        for rank, (op, size, frames) in enumerate(sides):
            dump = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg",
                                                             "ranks": "[0, 1]"}},
                    "pg_status": {"0": {"last_enqueued_collective": "2",
                                        "last_started_collective": "-1",
                                        "last_completed_collective": "1"}},
                    "entries": [_entry(1, "all_reduce", "completed", frames),
                                _entry(2, op, "scheduled", frames, size)]}
            (dumps / f"gloo_trace_rank_{rank}").write_text(json.dumps(dump))
        return dumps

    # Two ranks taking different paths, their stacks full of secrets...
    sets = [write_set("dumps", [("all_reduce", 4, _frames(home, HOME_SECRETS[:half])),
                                ("broadcast", 4, _frames(home, HOME_SECRETS[half:]))])]
    # ... and a size mismatch whose call site (the innermost frame) is one secret's line.
    for i, secret in enumerate(HOME_SECRETS):
        for name in ("<module>", "<lambda>"):
            for filename in (str(home / secret), secret):
                frames = [{"name": name, "filename": filename, "line": 1}]
                sets.append(write_set(f"sizes_{len(sets)}", [("all_reduce", 4, frames),
                                                             ("all_reduce", 8, frames)]))
    dumps = sets[0]
    linked = job / "linked"
    linked.mkdir()
    (linked / "gloo_trace_rank_0").write_text((dumps / "gloo_trace_rank_0").read_text())
    (linked / "gloo_trace_rank_1").symlink_to(home / ".ssh" / "id_rsa")
    (job / ".env").write_text(f"TOKEN={canary}\n")
    environ_canary = f"{canary}-ENVIRON"
    return {"canary": canary, "home": home, "job": job, "dumps": dumps, "sets": sets,
            "linked": linked,
            "env": {"HOME": str(home), "DESYNC_TEST_SECRET": environ_canary},
            "forbidden": [canary, environ_canary]}


def _run_in(args: list[str], cwd: Path | str, env: dict) -> subprocess.CompletedProcess:
    exe = desync_bin()
    return subprocess.run([str(exe), *args], cwd=str(cwd), capture_output=True,
                          timeout=WALL_CAP_S, preexec_fn=_cap_memory, check=False,
                          env={**os.environ, "NO_COLOR": "", **env})


def _every_output(dumps: str, cwd: Path | str, extra: list[str], out: Path, home: dict) -> None:
    """analyze (text; JSON with --html and --emit-probes) and report on one dump set: each
    finds the problem (exit 1) and no output holds a secret."""
    for args, files in [
        (["analyze", dumps, "--color", "never", *extra], []),
        (["analyze", dumps, "--format", "json", "--html", str(out / "a.html"),
          "--emit-probes", str(out / "probes.diff"), *extra], [out / "a.html", out / "probes.diff"]),
        (["report", dumps, "-o", str(out / "r.html"), *extra], [out / "r.html"]),
    ]:
        what = f"{args[0]} {dumps} from {cwd} {extra}"
        proc = _run_in(args, cwd, home["env"])
        check_ran_well(proc, what, home["forbidden"], files)
        assert proc.returncode == 1, f"{what}: {proc.stderr.decode()[-2000:]}"


def test_crafted_frames_never_put_a_secret_in_a_report(fake_home, tmp_path):
    """From HOME and from /, with no root given, and with an explicit --source-root HOME: no
    output of analyze (text, JSON, --html, --emit-probes) or report holds a canary byte, and
    without a root the report says to pass --source-root."""
    home = fake_home["home"]
    runs = [(home, []), ("/", []), (home, ["--source-root", str(home)])]
    for n, (cwd, extra) in enumerate(runs):
        for dumps in fake_home["sets"]:
            out = tmp_path / f"out{n}" / dumps.name
            out.mkdir(parents=True)
            _every_output(str(dumps), cwd, extra, out, fake_home)
        proc = _run_in(["analyze", str(fake_home["dumps"]), "--format", "json", *extra], cwd,
                       fake_home["env"])
        report = json.loads(proc.stdout)
        assert report["verdict"]["category"] != "healthy"
        warnings = [w["message"] for w in report["warnings"] if w["kind"] == "source"]
        if not extra:
            assert any("--source-root" in w and "home directory" in w for w in warnings), warnings
        else:
            assert any("not a Python source file" in w for w in warnings), warnings


def test_a_dump_symlink_to_a_secret_is_never_echoed(fake_home):
    """`gloo_trace_rank_1 -> ~/.ssh/id_rsa` inside the dump directory is not followed, and
    a non-dump named directly is described by its size, never quoted."""
    job, env = fake_home["job"], fake_home["env"]
    proc = _run_in(["analyze", str(fake_home["linked"]), "--format", "json"], job, env)
    check_ran_well(proc, "linked dumps", fake_home["forbidden"])
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("outside the dump directory" in w["message"] for w in warnings), warnings
    direct = _run_in(["analyze", str(job / ".env")], job, env)
    check_ran_well(direct, "a non-dump named directly", fake_home["forbidden"])
    assert direct.returncode == 2 and b"not a Flight Recorder dump" in direct.stderr, direct.stderr


def test_mcp_reads_only_inside_the_allowed_roots(fake_home):
    """`desync mcp` started in HOME allows nothing; started with --allow-root JOB it refuses a
    source_root or path_maps target outside JOB, never echoes a non-dump, and its source and
    probes_diff tools hold no secret."""
    job, home, env = fake_home["job"], fake_home["home"], fake_home["env"]
    dumps = str(fake_home["dumps"])
    init = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]

    def call(i, name, args):
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": name, "arguments": args}}

    def text(answer):
        return json.dumps(answer.get("error")) if "error" in answer else "".join(
            c.get("text", "") for c in answer["result"]["content"])

    def is_error(answer):
        return "error" in answer or answer["result"].get("isError")

    # Started in HOME without --allow-root: the client may read nothing.
    proc, answers = run_mcp_in_phases(str(home), [init + [call(1, "load_dumps", {"path": dumps})]],
                                      env=env)
    check_ran_well(proc, "mcp in HOME", fake_home["forbidden"])
    assert is_error(answers[1]) and "--allow-root" in text(answers[1]), text(answers[1])

    first = init + [call(1, "load_dumps", {"path": dumps})]
    rest = [
        call(2, "load_dumps", {"path": dumps, "source_root": "/"}),
        call(3, "load_dumps", {"path": dumps, "path_maps": ["/w=/"]}),
        call(4, "load_dumps", {"path": dumps, "source_root": str(home)}),
        call(5, "load_dumps", {"path": str(job / ".env")}),
        call(6, "load_dumps", {"path": str(fake_home["linked"])}),
        call(7, "source", {"handle": "h1", "file": str(home / ".aws/credentials"), "line": 1}),
        call(8, "source", {"handle": "h1", "file": str(job / ".env"), "line": 1}),
        call(9, "compare_stacks", {"handle": "h1"}),
        call(10, "probes_diff", {"handle": "h1"}),
        call(11, "lint", {"paths": [str(home)]}),
    ]
    proc, answers = run_mcp_in_phases(str(home), [first, rest], ["--allow-root", str(job)], env)
    check_ran_well(proc, "mcp --allow-root JOB", fake_home["forbidden"])
    assert not is_error(answers[1]), text(answers[1])
    for i in (2, 3, 4, 11):
        assert is_error(answers[i]) and "outside the directories this server allows" in text(answers[i]), text(answers[i])
    assert is_error(answers[5]) and "not a Flight Recorder dump" in text(answers[5]), text(answers[5])
    for i in (7, 8):
        assert is_error(answers[i]), text(answers[i])


# Issue 43: a file that starts with 0x80 decodes as a pickle whether or not it is a dump; no
# decode error, warning or report may quote what it holds.
PICKLE_SECRET = "AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI-K7MDENG-bPxRfiCY"


def _short_binunicode(text: str) -> bytes:
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def _pickle_shaped_non_dumps(where: Path) -> list[Path]:
    import pickle
    s = PICKLE_SECRET
    files = {
        # The protocol header, then the secret as a string: complete, truncated, followed by
        # a byte that is no opcode, inside a container that breaks a rule.
        "complete": b"\x80\x04" + _short_binunicode(s) + b".",
        "truncated": b"\x80\x02" + _short_binunicode(s),
        "unknown_opcode": b"\x80\x02" + _short_binunicode(s) + b"\xfe",
        "odd_dict": b"\x80\x02}(" + _short_binunicode(s) + b"u.",
        "global": b"\x80\x02c" + s.encode() + b"\nx\n.",
        # Pickled dicts that decode but are no dump: the secret as the version, in pg_config.
        "as_version": pickle.dumps({"version": s, "entries": [],
                                    "comm_lib_version": s}, protocol=2),
        "config_only": pickle.dumps({"pg_config": {s: {"name": s, "desc": s, "ranks": s}}},
                                    protocol=2),
        "number_version": pickle.dumps({"version": 7, "entries": [], "pg_config": {
            "0": {"name": s, "desc": s, "ranks": "[0]"}}}, protocol=2),
    }
    paths = []
    for i, (name, data) in enumerate(files.items()):
        path = where / name / f"nccl_trace_rank_{i}"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_a_pickle_shaped_non_dump_is_never_quoted(tmp_path):
    job = tmp_path / "job"
    files = _pickle_shaped_non_dumps(job / "dumps")
    together = job / "together"
    together.mkdir()
    for f in files:
        (together / f.name).write_bytes(f.read_bytes())
    forbidden = [PICKLE_SECRET, PICKLE_SECRET[:12], "wJalrXUtnFEMI"]
    env: dict = {}
    for target in [together, *files]:
        for args, out in [
            (["analyze", str(target), "--color", "never"], []),
            (["analyze", str(target), "--format", "json", "--html", str(tmp_path / "a.html")],
             [tmp_path / "a.html"]),
            (["report", str(target), "-o", str(tmp_path / "r.html")], [tmp_path / "r.html"]),
        ]:
            proc = _run_in(args, job, env)
            check_ran_well(proc, f"{args[0]} {target.parent.name}", forbidden, out)
            for f in out:
                f.unlink(missing_ok=True)
    # Each one alone is not a dump, and says so by its shape only.
    for f in files:
        proc = _run_in(["analyze", str(f)], job, env)
        assert proc.returncode == 2, (f, proc.stderr)

    init = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    loads = [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
              "params": {"name": "load_dumps", "arguments": {"path": str(target)}}}
             for i, target in enumerate([together, *files])]
    verdicts = [{"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                 "params": {"name": "verdict", "arguments": {"handle": "h1"}}}]
    proc, answers = run_mcp_in_phases(str(job), [init + loads, verdicts],
                                      ["--allow-root", str(job)])
    check_ran_well(proc, "mcp load_dumps of pickle-shaped non-dumps", forbidden)
    assert len(answers) >= len(loads), answers
