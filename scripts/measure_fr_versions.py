"""Measures what Flight Recorder does under Gloo in the torch this interpreter runs.

Run it with each venv's python (``venv-torch28/bin/python scripts/measure_fr_versions.py``);
it prints one JSON object. Every field comes from running a real 2-rank Gloo job on CPU
(subprocesses of this script, a TCPStore on localhost), never from the docs:

- ``default_entries``: entries in rank 0's recorder after 6 collectives with no FR variable
  set (0: the recorder is off by default; 6 or more: on);
- ``reads``: for each buffer-size name, whether setting it alone to 3 caps the recorder at 3
  entries (the name is read), and ``warns``: the lines of the ranks' stderr that mention the
  name (torch's deprecation warnings);
- ``dump_calls``: the recorder calls ``torch._C._distributed_c10d`` has;
- ``version``: the ``version`` field a dump carries; ``keys`` and ``entry_keys``: the dump's
  and an entry's fields; ``ops``/``states``: what Gloo recorded for all_reduce, broadcast,
  all_gather, send/recv and barrier; ``frames``: whether entries carry Python frames;
- ``json``: whether ``_dump_fr_trace_json`` works, and ``file_dump``: what
  ``_dump_fr_trace_file`` (torch 2.15) writes with its default arguments (frames or not);
- ``backend_arg``: whether the dump calls take ``backend=`` (one recorder per backend).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import tempfile

NAMES = ["TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"]
FR_ENV = NAMES + ["TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                  "TORCH_FR_CPP_STACK", "TORCH_NCCL_TRACE_CPP_STACK"]


def rank_main(rank: int, world: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=world)
    t = torch.ones(4)
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    dist.all_gather([torch.zeros(4) for _ in range(world)], t)
    if rank == 0:
        dist.send(t, 1)
    elif rank == 1:
        dist.recv(t, 0)
    dist.all_reduce(t)
    dist.barrier()
    dist.all_reduce(t)
    c10d = torch._C._distributed_c10d
    if hasattr(c10d, "_dump_fr_trace"):
        with open(f"{out}/rank_{rank}", "wb") as fh:
            fh.write(c10d._dump_fr_trace())
    if hasattr(c10d, "_dump_fr_trace_json"):
        try:
            data = c10d._dump_fr_trace_json()
            with open(f"{out}/rank_{rank}.json", "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
        except Exception as exc:
            print(f"json dump failed: {exc}", file=sys.stderr)
    if hasattr(c10d, "_dump_fr_trace_file"):
        os.environ["TORCH_FR_DUMP_TEMP_FILE"] = f"{out}/file_rank_"
        try:
            c10d._dump_fr_trace_file(rank)
        except Exception as exc:
            print(f"file dump failed: {exc}", file=sys.stderr)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def job(env_extra: dict[str, str]) -> tuple[str, str]:
    out = tempfile.mkdtemp(prefix="fr-measure-")
    env = {k: v for k, v in os.environ.items() if k not in FR_ENV}
    env.update(env_extra, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    procs = [subprocess.Popen([sys.executable, __file__, "rank", str(r), "2", out], env=env,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    errs = [p.communicate(timeout=240)[1] for p in procs]
    return out, "".join(errs)


def load(path: str) -> dict:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def main() -> None:
    import torch
    import torch._C._distributed_c10d as c10d

    result: dict = {"torch": torch.__version__}
    calls = sorted(n for n in dir(c10d) if "fr_trace" in n or "nccl_trace" in n)
    result["dump_calls"] = calls
    doc = (getattr(c10d, "_dump_fr_trace", None).__doc__ or "") if calls else ""
    result["backend_arg"] = "backend" in doc

    out, err = job({})
    if not os.path.exists(f"{out}/rank_0"):
        result["default_entries"] = None
        print(json.dumps(result))
        return
    dump = load(f"{out}/rank_0")
    entries = dump.get("entries", [])
    result["default_entries"] = len(entries)
    result["version"] = dump.get("version")
    result["keys"] = sorted(dump)
    result["entry_keys"] = sorted(entries[0]) if entries else []
    result["ops"] = [e.get("profiling_name") for e in entries]
    result["states"] = sorted({str(e.get("state")) for e in entries})
    result["frames"] = any(e.get("frames") for e in entries)
    result["pg_config"] = dump.get("pg_config")
    result["json"] = os.path.exists(f"{out}/rank_0.json")
    if os.path.exists(f"{out}/file_rank_0"):
        fd = load(f"{out}/file_rank_0")
        result["file_dump"] = {"entries": len(fd.get("entries", [])),
                               "frames": any(e.get("frames") for e in fd.get("entries", []))}
    result["default_stderr"] = [l for l in err.splitlines() if "TORCH_" in l][:4]

    reads, warns = {}, {}
    for name in NAMES:
        out, err = job({name: "3"})
        n = len(load(f"{out}/rank_0").get("entries", [])) if os.path.exists(f"{out}/rank_0") else None
        reads[name] = n == 3
        warns[name] = sorted({l.split("] ", 1)[-1][:160] for l in err.splitlines() if name in l})
    result["reads"] = reads
    result["warns"] = warns
    # What a job sees with each pair set to the same value (old and new name both set, as
    # desync's enable() did up to now), and with only the new names.
    pairs = {"TORCH_FR_BUFFER_SIZE": "2000", "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
             "TORCH_FR_CPP_STACK": "0", "TORCH_NCCL_TRACE_CPP_STACK": "0"}
    for label, env in (("both_names", pairs),
                       ("new_names", {k: v for k, v in pairs.items() if "_FR_" in k})):
        _, err = job(env)
        result[f"warns_{label}"] = sorted({l.split("] ", 1)[-1][:160] for l in err.splitlines()
                                           if "deprecated" in l.lower()})
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        os.environ["RANK"] = sys.argv[2]
        rank_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main()
