#!/usr/bin/env python3
"""How large desync's answers are on one job: every MCP tool's answer (through the real server
and the official `mcp` client), the JSON report and the default Perfetto export.

    python bench/answer_sizes.py --desync target/release/desync DUMPS_OR_SUMMARIES [--out FILE]

The bounds (issue 46): every MCP answer < 32 KB, JSON report < 5 MB, Perfetto export with
defaults < 100 MB, at any world size. Prints one JSON object of byte counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path


async def mcp_sizes(desync: str, path: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root = path.resolve().parent
    server = StdioServerParameters(command=desync, args=["mcp", "--allow-root", str(root)])
    sizes: dict[str, int] = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def call(name: str, label: str | None = None, **args):
                result = await session.call_tool(name, args)
                text = "".join(getattr(c, "text", "") for c in result.content)
                assert not result.is_error, f"{name}: {text[:400]}"
                sizes[label or name] = len(text.encode())
                return json.loads(text) if text.startswith("{") else text

            loaded = await call("load_dumps", path=str(path.resolve()))
            handle = loaded["handle"]
            v = await call("verdict", handle=handle)
            await call("groups", handle=handle)
            await call("groups", "groups (limit 100)", handle=handle, limit=100)
            pgs = await call("process_groups", "process_groups (limit 100)", handle=handle, limit=100)
            sizes["process_groups_total"] = pgs["total"]
            culprits = v["verdict"]["culprit_ranks"] or [0]
            await call("rank_entries", "rank_entries (last 100)", handle=handle, rank=culprits[0], last=100)
            pg = v["verdict"].get("process_group")
            seq = v["verdict"].get("collective_seq_id")
            if pg and seq is not None:
                await call("collective", handle=handle, process_group=pg["name"], seq=seq)
            await call("compare_stacks", handle=handle)
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--desync", required=True)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result: dict = {"path": args.path.name}
    with tempfile.TemporaryDirectory(prefix="desync-sizes-") as tmp:
        report = Path(tmp) / "report.json"
        with report.open("wb") as out:
            subprocess.run([args.desync, "analyze", str(args.path), "--format", "json"], stdout=out, check=False)
        doc = json.loads(report.read_text())
        result["ranks_loaded"] = doc["input"]["world_size"]
        result["verdict"] = {k: doc["verdict"][k] for k in ("category", "culprit_ranks", "collective_seq_id")}
        result["json_report_bytes"] = report.stat().st_size
        trace = Path(tmp) / "trace.json"
        subprocess.run([args.desync, "export", str(args.path), "--perfetto", str(trace)], check=True)
        result["perfetto_default_bytes"] = trace.stat().st_size
        result["perfetto_selection"] = json.loads(trace.read_bytes()[:4096].split(b',"traceEvents"')[0] + b"}")[
            "otherData"]["selection"]
        html = Path(tmp) / "report.html"
        subprocess.run([args.desync, "report", str(args.path), "-o", str(html)], check=False)
        result["html_report_bytes"] = html.stat().st_size
    result["mcp_answer_bytes"] = asyncio.run(mcp_sizes(args.desync, args.path))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
