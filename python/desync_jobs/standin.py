"""Stand-in debug-server workers: many ranks' `start_debug_server` endpoints on loopback.

A real job's workers answer `POST /handler/<name>`; these answer the NCCL recorder handler
the way torch's `FlightRecorderCuda.cpp` does (`includecollectives`, `includestacktraces`,
`onlyactive` as `true`/`false`; HTTP 400 for any other parameter or value) with per-rank
pickles written by `desync-synth`, and `dump_traceback` with a faulthandler-style stack. They
register in a real torch `TCPStore` under `debug_server/rank<N>`, as `start_debug_server`
does, so `desync watch --store` finds them exactly as it finds a real job.

Each state (healthy, then the injected fault) is a pair of synth directories: the whole
recorder with frames, and the same recorder's active entries without frames (`--only-active`),
which is what the handler returns for `onlyactive=true&includestacktraces=false`.

Used by `bench/watch_scale.py` (256 to 4,096 ranks) and `python/tests/test_watch_scale.py`.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

NCCL_HANDLER = "/handler/dump_nccl_trace_pickle"
TRACEBACK_HANDLER = "/handler/dump_traceback"
NCCL_PARAMS = {"includecollectives": True, "includestacktraces": True, "onlyactive": False}
PREFIX = "nccl_trace_rank_"


def synth_state(synth: Path, out: Path, ranks: int, fault: str, groups: str = "",
                seed: int = 7, history: int | None = None) -> dict[str, Path]:
    """`{"whole": dir, "active": dir}` for one job state, written by desync-synth."""
    dirs = {"whole": out / "whole", "active": out / "active"}
    common = [str(synth), "--ranks", str(ranks), "--fault", fault, "--seed", str(seed)]
    if history is not None:
        common += ["--history", str(history)]
    if groups:
        common += ["--groups", groups]
    subprocess.run(common + ["--out", str(dirs["whole"]), "--frames"], check=True,
                   capture_output=True)
    subprocess.run(common + ["--out", str(dirs["active"]), "--only-active"], check=True,
                   capture_output=True)
    return dirs


def healthy_states(synth: Path, out: Path, ranks: int, groups: str = "",
                   count: int = 3) -> list[dict[str, Path]]:
    """A healthy job at `count` moments a few steps apart. One frozen snapshot of a job with a
    collective in flight is what a hang looks like; a live job moves on between polls. The
    stand-ins serve them in order, one per `step_s`, and then start over (a job that went back
    in time): `count * step_s` should cover the healthy part of a run."""
    return [synth_state(synth, out / f"healthy-{i}", ranks, "none", groups,
                        history=2988 + 5 * i) for i in range(count)]


@dataclass
class Counters:
    requests: int = 0
    bytes: int = 0
    refused: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    # Requests per kind, and the same counts when the workers switched to the fault.
    requests_by_kind: dict[str, int] = field(default_factory=dict)
    at_switch: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, size: int) -> None:
        self.requests += 1
        self.bytes += size
        self.requests_by_kind[kind] = self.requests_by_kind.get(kind, 0) + 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + size


class StandIns:
    """`ranks` workers serving the `healthy` states in turn (a new one every `step_s`, counted
    from `start()`) until `switch()`, then `fault`. `refuse_params`: answer 400 to any query
    parameter (a handler that takes none)."""

    def __init__(self, ranks: int, healthy: list[dict[str, Path]], fault: dict[str, Path],
                 refuse_params: bool = False, step_s: float = 1.5):
        self.ranks = ranks
        self.healthy = healthy
        self.fault = fault
        self.step_s = step_s
        self.state = "healthy"
        self.switched_at: float | None = None
        self.refuse_params = refuse_params
        self.counters = Counters()
        self.ports: list[int] = []
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.base_events.Server] = []
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._started = time.monotonic()

    def start(self) -> "StandIns":
        self._started = time.monotonic()
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=120)
        return self

    def register(self, store_host: str, store_port: int) -> None:
        """Writes `debug_server/rank<N>` into the job's TCPStore, as start_debug_server does."""
        import torch.distributed as dist

        store = dist.TCPStore(store_host, store_port, is_master=False,
                              timeout=__import__("datetime").timedelta(seconds=30))
        registry = dist.PrefixStore("debug_server", store)
        for rank, port in enumerate(self.ports):
            registry.set(f"rank{rank}", f"http://127.0.0.1:{port}")

    def switch(self) -> None:
        self.counters.at_switch = dict(self.counters.requests_by_kind)
        self.state = "fault"
        self.switched_at = time.time()

    def stop(self) -> None:
        async def close():
            for server in self._servers:
                server.close()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    async def _listen(self) -> None:
        for rank in range(self.ranks):
            server = await asyncio.start_server(
                lambda r, w, rank=rank: self._serve(rank, r, w), "127.0.0.1", 0, backlog=64)
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])

    async def _serve(self, rank: int, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            status, body, kind = self._answer(rank, request.decode("latin-1"))
            head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/octet-stream\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            writer.write(head.encode() + body)
            await writer.drain()
            self.counters.add(kind, len(body))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _answer(self, rank: int, request_line: str) -> tuple[int, bytes, str]:
        parts = request_line.split()
        target = parts[1] if len(parts) >= 2 else "/"
        path, _, query = target.partition("?")
        if path == TRACEBACK_HANDLER:
            stack = (f"Thread 0x00007f00000{rank:05x} (most recent call first):\n"
                     f'  File "/job/train.py", line 42 in train_step\n'
                     f'  File "/job/train.py", line 80 in main\n')
            return 200, stack.encode(), "traceback"
        if path != NCCL_HANDLER:
            return 404, b"Handler not found", "other"
        params = dict(NCCL_PARAMS)
        for name, value in parse_qsl(query, keep_blank_values=True):
            if self.refuse_params or name not in params:
                self.counters.refused += 1
                return 400, b"Invalid parameters - unexpected param passed in", "refused"
            if value not in ("true", "false"):
                return 400, f"Invalid value for {name} valid values are true or false".encode(), \
                    "refused"
            params[name] = value == "true"
        # The synth writes two variants per state: whole with frames, and active-only without.
        variant = "active" if params["onlyactive"] else "whole"
        if self.state == "fault":
            dirs = self.fault
        else:
            moment = int((time.monotonic() - self._started) / self.step_s)
            dirs = self.healthy[moment % len(self.healthy)]
        file = dirs[variant] / f"{PREFIX}{rank}"
        if not file.exists():  # a crashed rank: its worker is gone with it
            return 503, b"rank is gone", "other"
        return 200, file.read_bytes(), variant
