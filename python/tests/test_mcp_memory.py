"""The MCP server's handle budget holds on a job with many process groups (issue 43).

The server keeps each loaded analysis under a handle and drops the oldest past 16 handles or
about 2 GiB. Its estimate of what a handle holds once counted entries and rank numbers only:
a job of 100,000 process groups (4 ranks, one collective each) holds about 650 MB per load,
which the estimate put at under 70 MB, so the server grew by that much per load until the
machine killed it (after 9 loads on a 24 GB machine). Here the server loads such a job
repeatedly and must stay bounded, drop old handles, and keep answering.

Spoken to over stdio with plain JSON-RPC lines (the protocol is newline-delimited JSON), so
the server's memory can be read from /proc between calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, desync_bin

GROUPS = 100_000
# Three such handles fit the 2 GiB budget, so the fourth load must drop one; an estimate
# that undercounts (the old one: under 70 MB a load) drops nothing before 16 handles. Each
# load costs seconds of a two-core CI machine: four are the fewest that tell the two apart.
LOADS = 4
# The server's own code and a load's transient buffers come on top of the budget.
MAX_RSS_BYTES = 3 << 30


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Server:
    def __init__(self, allow: Path) -> None:
        self.proc = subprocess.Popen(
            [str(desync_bin()), "mcp", "--allow-root", str(allow)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "desync-tests", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the server died (exit {self.proc.wait()})"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def tool(self, name: str, arguments: dict) -> dict:
        answer = self.call("tools/call", {"name": name, "arguments": arguments})
        result = answer["result"]
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_repeated_loads_of_a_many_group_job_stay_within_the_budget(tmp_path):
    dumps = tmp_path / "groups"
    subprocess.run([sys.executable, str(REPO / "bench" / "many_groups.py"), str(GROUPS),
                    str(dumps)], check=True, timeout=300)
    server = Server(tmp_path)
    try:
        dropped = []
        peak = 0
        for _ in range(LOADS):
            answer = server.tool("load_dumps", {"path": str(dumps)})
            dropped += answer.get("dropped_handles", [])
            peak = max(peak, rss_bytes(server.proc.pid))
        assert peak < MAX_RSS_BYTES, f"server RSS reached {peak >> 20} MiB"
        assert dropped, "no handle was dropped: the budget did not see what a handle holds"
        # The newest handle answers.
        verdict = server.tool("verdict", {"handle": answer["handle"]})
        assert verdict["verdict"]["category"] == "healthy", verdict["verdict"]
    finally:
        server.close()
