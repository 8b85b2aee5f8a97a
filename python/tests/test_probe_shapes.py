"""The probes desync writes apply and compile, whatever the shape of the code around the branch.

For each file shape of a corpus (quotes, f-strings, backslash and bracketed multi-line
conditions with comments, triple-quoted strings, `elif`, CRLF, no final newline, tabs, nested
functions, methods, decorators, loops, `try`/`finally`, `with`, `match`, a walrus, a call),
small hand-made JSON dumps of two ranks put rank 0 at a collective inside the branch and rank 1
at one outside it, with frames naming the file's lines. The real binary analyses them with
`--source-root` and `--emit-probes`; the patch must pass `git apply --check`, apply, keep the
file's line endings and final-newline state, put the probe right before the statement that
evaluates the condition (in its block), and compile with the oldest and the newest Python the
project supports wherever the original does.

Interpreters: a native `python3.9` / `python3.13` (on PATH or under pyenv) when there is one.
Without a native 3.13, Pyodide's CPython 3.13 from npm (`scripts/pyodide.sh`, cached) compiles
under Node.js. Without a native 3.9, the running Python parses with
`ast.parse(feature_version=(3, 9))`, which rejects 3.10+ grammar (`match`, parenthesised
context managers) but not every later change a 3.9 compiler would (a warning says so).
"""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO, run_desync

pytestmark = [pytest.mark.desync]

# Rank 0 issues OPS[A] inside the branch, rank 1 OPS[B] outside it; both first meet at C.
OPS = {"A": "all_reduce", "B": "broadcast", "C": "barrier"}
FRAME_DIR = "/tmp/desync-jobs/shapes"


@dataclass
class Shape:
    name: str
    construct: str
    function: str
    source: str
    crlf: bool = False
    final_newline: bool = True
    # (rank 0's marker, rank 1's marker) per collective, in order.
    events: list[tuple[str, str]] = field(default_factory=lambda: [("C", "C"), ("A", "B")])
    # Probes written as snippets only, never into the patch.
    snippet_only: bool = False


def plain(condition: str, *, function="train", indent="    ") -> str:
    return f"""import torch
import torch.distributed as dist


def {function}(rank, mode, t):
{indent}dist.barrier()  #@C
{indent}t = t * 2
{indent}if {condition}:
{indent}{indent}dist.all_reduce(t)  #@A
{indent}dist.broadcast(t, 0)  #@B
{indent}return t
"""


SHAPES = [
    Shape("plain_if", "if", "train", plain("rank == 0")),
    Shape("double_quotes", "if", "train", plain('mode == "eval" and rank == 0')),
    Shape("fstring", "if", "train", plain('f"{mode}-{rank}" == "eval-0"')),
    Shape("backslash", "if", "train", plain('rank == 0 and \\\n            mode == "eval"')),
    Shape("multiline_comment", "if", "train",
          plain('(rank == 0  # only the first rank\n            and mode != "train")')),
    Shape("triple_quoted", "if", "train", plain('rank == 0 and mode in """eval\ntest"""')),
    Shape("percent_and_braces", "if", "train", plain("rank % 2 == 0 and mode not in {'x': 1}")),
    Shape("crlf", "if", "train", plain('(rank == 0 and\n            mode == "eval")'), crlf=True),
    Shape("no_final_newline", "if", "train", plain("rank == 0").rstrip("\n").rsplit("\n", 1)[0],
          final_newline=False),
    Shape("tabs", "if", "train", plain("rank == 0", indent="\t")),
    Shape("walrus", "if", "train", plain("(n := rank + 1) > 1")),
    Shape("call_condition", "if", "train", plain("is_main(rank)")),
    Shape("elif", "elif", "train", """import torch.distributed as dist


def train(rank, mode, t):
    dist.barrier()  #@C
    if mode == "train":
        t = t + 1
    elif rank == 0 and mode == "eval":
        dist.all_reduce(t)  #@A
    else:
        t = t - 1
    dist.broadcast(t, 0)  #@B
"""),
    Shape("elif_calls", "elif", "train", """import torch.distributed as dist


def train(rank, mode, t):
    dist.barrier()  #@C
    if mode == "train":
        t = t + 1
    elif is_main(rank):
        dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
""", snippet_only=True),
    Shape("nested_function", "if", "inner", """import torch.distributed as dist


def outer(t):
    def inner(rank):
        dist.barrier()  #@C
        if rank == 0:
            dist.all_reduce(t)  #@A
        dist.broadcast(t, 0)  #@B
    return inner
"""),
    Shape("method", "if", "step", """import torch.distributed as dist


class Trainer:
    rank = 0

    def step(self, t):
        dist.barrier()  #@C
        if self.rank == 0:
            dist.all_reduce(t)  #@A
        dist.broadcast(t, 0)  #@B
"""),
    Shape("decorator", "if", "train", """import torch
import torch.distributed as dist


@torch.no_grad()
def train(rank, t):
    dist.barrier()  #@C
    if rank == 0:
        dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
"""),
    Shape("module_level", "if", "<module>", """import torch
import torch.distributed as dist

rank = dist.get_rank()
t = torch.ones(2)
dist.barrier()  #@C
if rank == 0:
    dist.all_reduce(t)  #@A
dist.broadcast(t, 0)  #@B
"""),
    Shape("while_loop", "while", "train", """import torch.distributed as dist


def train(rank, t, limit):
    step = 0
    while step < limit + rank:
        dist.all_reduce(t)  #@A
        step += 1
    dist.broadcast(t, 0)  #@B
""", events=[("A", "A"), ("A", "B")]),
    Shape("for_loop", "for", "train", """import torch.distributed as dist


def train(rank, t, batches):
    for batch in batches:
        dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
""", events=[("A", "A"), ("A", "B")]),
    Shape("for_generator", "for", "train", """import torch.distributed as dist


def train(rank, t, batches):
    stream = (b for b in batches if b > rank)
    for batch in stream:
        # one collective per batch
        dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
""", events=[("A", "A"), ("A", "B")]),
    Shape("for_else", "if", "train", """import torch.distributed as dist


def train(rank, t, batches):
    dist.barrier()  #@C
    for b in batches:
        t = t + b
    else:
        if rank == 0:
            dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
"""),
    Shape("try_finally", "if", "train", """import torch.distributed as dist


def train(rank, t):
    dist.barrier()  #@C
    try:
        t = t + 1
    except ValueError:
        t = t - 1
    finally:
        if rank == 0:
            dist.all_reduce(t)  #@A
    dist.broadcast(t, 0)  #@B
"""),
    Shape("with_block", "if", "train", """import torch
import torch.distributed as dist


def train(rank, t):
    with torch.no_grad():
        dist.barrier()  #@C
        if rank == 0:
            dist.all_reduce(t)  #@A
        dist.broadcast(t, 0)  #@B
"""),
    Shape("match", "if", "train", """import torch.distributed as dist


def train(rank, mode, t):
    dist.barrier()  #@C
    match mode:
        case "eval":
            if rank == 0:
                dist.all_reduce(t)  #@A
        case _:
            pass
    dist.broadcast(t, 0)  #@B
"""),
    Shape("continue_guard", "continue", "train", """import torch.distributed as dist


def train(rank, t, batches):
    for b in batches:
        dist.barrier()  #@C
        if rank == 0 and b > 2:
            continue
        dist.all_reduce(t)  #@A
""", events=[("C", "C"), ("C", "A")]),
]


def marker_lines(source: str) -> dict[str, int]:
    lines = {}
    for number, text in enumerate(source.split("\n"), start=1):
        for marker in OPS:
            if text.rstrip().endswith(f"#@{marker}"):
                lines[marker] = number
    return lines


def write_dumps(shape: Shape, source: str, dumps: Path) -> None:
    lines = marker_lines(source)
    dumps.mkdir()
    for rank in (0, 1):
        entries = []
        for seq, pair in enumerate(shape.events, start=1):
            marker = pair[rank]
            line = lines[marker]
            last = seq == len(shape.events)
            entries.append({
                "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "record_id": seq - 1,
                "pg_id": 0, "process_group": ["0", "default_pg"],
                "profiling_name": f"gloo:{OPS[marker]}", "is_p2p": False,
                "input_sizes": [[4]], "output_sizes": [[4]],
                "input_dtypes": ["Float"], "output_dtypes": ["Float"],
                "state": "scheduled", "retired": not last, "timeout_ms": 6000,
                "time_created_ns": 1_000_000_000 * seq + rank,
                "time_discovered_started_ns": 0, "time_discovered_completed_ns": 0,
                "thread_id": "1", "thread_name": "python",
                "frames": [{"name": shape.function,
                            "filename": f"{FRAME_DIR}/{shape.name}.py", "line": line}],
            })
        dump = {
            "version": "2.10", "comm_lib_version": "", "nccl_comm_state": {},
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": str(len(shape.events)),
                                "last_started_collective": "-1",
                                "last_completed_collective": str(len(shape.events) - 1)}},
            "entries": entries,
        }
        (dumps / f"gloo_trace_rank_{rank}").write_text(json.dumps(dump))


@dataclass
class Outcome:
    shape: Shape
    original: bytes
    patched: Path
    report: dict
    patch: Path
    stderr: str


def file_bytes(shape: Shape) -> bytes:
    text = shape.source
    if not shape.final_newline:
        text = text.rstrip("\n")
    if shape.crlf:
        text = text.replace("\n", "\r\n")
    return text.encode()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    out = {}
    for shape in SHAPES:
        work = tmp_path_factory.mktemp(shape.name)
        src = work / "src"
        src.mkdir()
        original = file_bytes(shape)
        (src / f"{shape.name}.py").write_bytes(original)
        write_dumps(shape, shape.source, work / "dumps")
        patch = work / "probes.diff"
        code, report, stderr = run_desync(work / "dumps", source_root=src,
                                          extra=["--emit-probes", str(patch)], cwd=work)
        assert code == 1, (shape.name, stderr)
        if patch.exists():
            subprocess.run(["git", "init", "-q"], cwd=work, check=True)
            check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=work,
                                   capture_output=True, text=True)
            assert check.returncode == 0, (shape.name, check.stderr, patch.read_text())
            subprocess.run(["git", "apply", str(patch)], cwd=work, check=True)
        out[shape.name] = Outcome(shape, original, src / f"{shape.name}.py", report, patch, stderr)
    return out


def normal(text: str) -> str:
    return text.replace("\r\n", "\n")


def is_probe(stmt: ast.stmt, source: str) -> bool:
    """Every probe statement names a `_desync_` variable on its first line."""
    return "_desync_" in (ast.get_source_segment(source, stmt) or "").split("\n")[0]


def bodies(tree: ast.AST):
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def statement_after_probe(source: str, marker: str) -> tuple[list[ast.stmt], int]:
    """The block holding the probe statement whose text holds `marker`, and the index of
    the first statement after that probe that is not part of a probe."""
    tree = ast.parse(source)
    for block in bodies(tree):
        for i, stmt in enumerate(block):
            simple = not hasattr(stmt, "body") and not hasattr(stmt, "cases")
            if simple and marker in (ast.get_source_segment(source, stmt) or ""):
                j = i
                while j < len(block) and is_probe(block[j], source):
                    j += 1
                return block, j
    raise AssertionError(f"no probe statement holding {marker!r}")


@pytest.mark.parametrize("name", [s.name for s in SHAPES])
def test_probes_land_before_the_deciding_statement(outcomes, name):
    o = outcomes[name]
    branch = (o.report.get("code") or {}).get("branch")
    assert branch is not None, o.report.get("code")
    assert branch["construct"] == o.shape.construct, branch
    probes = {p["name"]: p for p in o.report["probes"]}
    if o.shape.snippet_only:
        # An elif whose tests call something is decided before the whole `if` only by hand:
        # the patch holds the call log inside its body, not the decision probes.
        for name in ("consensus", "decision_log"):
            assert "not in the patch" in probes[name]["description"], probes
        assert "call_log" in probes, probes
        assert "_desync_decision" not in o.patch.read_text()
        assert "_desync_calls" in o.patch.read_text()
        return
    patched = o.patched.read_bytes()
    assert patched != o.original and b"desync probe" in patched
    # Line endings and the final-newline state are the file's own.
    if o.shape.crlf:
        assert patched.count(b"\n") == patched.count(b"\r\n"), patched
    else:
        assert b"\r" not in patched
    assert patched.endswith(b"\n") == o.original.endswith(b"\n")
    # The patch only inserts lines: the original's lines are all there, in order.
    remaining = iter(patched.splitlines(keepends=True))
    assert all(line in remaining for line in o.original.splitlines(keepends=True))
    source = normal(patched.decode())
    condition = normal(branch["condition"] or "")
    if o.shape.construct == "for":
        assert "length_consensus" in probes and "iteration_log" in probes, probes
        block, j = statement_after_probe(source, "ranks iterate")
        assert isinstance(block[j], ast.For), ast.dump(block[j])
        assert ast.get_source_segment(source, block[j].iter) == condition
        leading = []
        for stmt in block[j].body:
            if not is_probe(stmt, source):
                break
            leading.append(ast.get_source_segment(source, stmt))
        assert any("iteration=" in text for text in leading), leading
        return
    assert "consensus" in probes and "decision_log" in probes, probes
    block, j = statement_after_probe(source, "ranks disagree")
    deciding = block[j]
    assert isinstance(deciding, (ast.If, ast.While)), ast.dump(deciding)
    # The statement right after the probe is the one that evaluates the condition (for an
    # `elif`, the whole `if` that holds it).
    assert condition in ast.get_source_segment(source, deciding), (condition, source)
    if o.shape.construct == "continue":
        assert "call_log" in probes, probes
        call_block, k = statement_after_probe(source, "about to run")
        assert "all_reduce" in ast.get_source_segment(source, call_block[k])


def native(version: str) -> str | None:
    """A native interpreter of `version` (`3.9`), on PATH or under pyenv."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    for exe in filter(None, candidates):
        probe = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return exe
    return None


COMPILE = """
import json, sys
errors = {}
for path in sys.argv[1:]:
    try:
        compile(open(path, "rb").read(), path, "exec")
    except SyntaxError as e:
        errors[path] = "%s: %s" % (type(e).__name__, e)
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3], "errors": errors}))
"""


def compile_errors(version: str, files: list[Path]) -> tuple[str, dict[str, str]]:
    """(how the files were compiled, {file: error}) with Python `version`."""
    names = [str(f) for f in files]
    if version == f"{sys.version_info[0]}.{sys.version_info[1]}":
        exe = sys.executable
    else:
        exe = native(version)
    if exe is not None:
        out = subprocess.run([exe, "-c", COMPILE, *names], capture_output=True, text=True,
                             check=True)
        result = json.loads(out.stdout)
        return f"CPython {result['version']}", result["errors"]
    if version == "3.13" and shutil.which("node"):
        pyodide = subprocess.run(["bash", str(REPO / "scripts" / "pyodide.sh")],
                                 capture_output=True, text=True, check=True).stdout.strip()
        out = subprocess.run(["node", str(Path(__file__).parent / "pyodide_compile.mjs"),
                              pyodide, *names], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        return f"Pyodide CPython {result['version']}", result["errors"]
    major, minor = (int(x) for x in version.split("."))
    warnings.warn(f"no Python {version} here: parsed with {sys.version.split()[0]}'s "
                  f"ast.parse(feature_version=({major}, {minor})), which checks grammar only")
    errors = {}
    for name in names:
        try:
            ast.parse(Path(name).read_bytes(), name, feature_version=(major, minor))
        except SyntaxError as e:
            errors[name] = f"{type(e).__name__}: {e}"
    return f"ast feature_version {version}", errors


@pytest.mark.parametrize("version", ["3.9", "3.11", "3.13"])
def test_patched_files_compile_wherever_the_original_does(outcomes, tmp_path, version):
    originals = []
    for o in outcomes.values():
        copy = tmp_path / f"{o.shape.name}.py"
        copy.write_bytes(o.original)
        originals.append(copy)
    patched = [o.patched for o in outcomes.values() if o.patch.exists()]
    how, before = compile_errors(version, originals + patched)
    # The corpus is ordinary code: only `match` is newer than 3.9.
    assert set(Path(f).stem for f in before if f.startswith(str(tmp_path))) <= {"match"}, before
    broken = {f: e for f, e in before.items()
              if not f.startswith(str(tmp_path))
              and str(tmp_path / (Path(f).stem + ".py")) not in before}
    assert not broken, (how, broken)
    assert len(patched) >= 16, [o.shape.name for o in outcomes.values() if not o.patch.exists()]


RUN_LOOPS = """
import importlib.util, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
for path in sys.argv[2:]:
    spec = importlib.util.spec_from_file_location("shape", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print("== " + path, flush=True)
    module.train(0, torch.ones(4), [1, 2, 3])
dist.destroy_process_group()
"""


@pytest.mark.jobs
def test_a_loop_over_an_iterable_without_len_says_so(outcomes, tmp_path):
    """The length consensus cannot compare what has no length: every rank says so in its log
    instead of passing silently, and the iteration log counts; a sized iterable says nothing."""
    sized, unsized = outcomes["for_loop"].patched, outcomes["for_generator"].patched
    run = subprocess.run([sys.executable, "-c", RUN_LOOPS, str(tmp_path / "store"),
                          str(sized), str(unsized)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    first, second = run.stdout.split("== ")[1:]
    assert "has no len()" not in first and first.count("iteration=") == 3, first
    assert "`stream` has no len(), so its length is not compared" in second, second
    assert second.count("iteration=") == 3, second
