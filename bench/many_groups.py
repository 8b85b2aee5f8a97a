"""Writes a 4-rank NCCL-format JSON dump set with N process groups, one completed all_reduce
in each, every group listed in pg_config: the input of BENCHMARKS.md "Many process groups".

    python3 bench/many_groups.py 10000 /tmp/groups-10000
    desync analyze /tmp/groups-10000 --quiet
"""

import json
import os
import sys

RANKS = 4
T0 = 1_795_358_594_428_997_993  # a real dump's clock, ns


def entry(group: int) -> dict:
    created = T0 + group * 1000
    return {
        "collective_seq_id": 1, "op_id": 1, "p2p_seq_id": 0, "record_id": group,
        "pg_id": group + 1, "process_group": [str(group + 1), "undefined"],
        "profiling_name": "nccl:all_reduce", "is_p2p": False,
        "input_sizes": [[4]], "input_dtypes": ["Float"],
        "output_sizes": [[4]], "output_dtypes": ["Float"],
        "state": "completed", "retired": True, "timeout_ms": 600000,
        "thread_id": "1", "thread_name": "python",
        "time_created_ns": created,
        "time_discovered_started_ns": created + 100,
        "time_discovered_completed_ns": created + 500,
    }


def main() -> None:
    groups, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    members = "[" + ", ".join(str(r) for r in range(RANKS)) + "]"
    dump = {
        "version": "2.10",
        "comm_lib_version": "",
        "nccl_comm_state": {},
        "entries": [entry(g) for g in range(groups)],
        "pg_config": {str(g + 1): {"name": str(g + 1), "desc": "undefined", "ranks": members}
                      for g in range(groups)},
        "pg_status": {str(g + 1): {"last_enqueued_collective": "1",
                                   "last_started_collective": "1",
                                   "last_completed_collective": "1"} for g in range(groups)},
    }
    text = json.dumps(dump)
    for rank in range(RANKS):
        with open(os.path.join(out, f"nccl_trace_rank_{rank}"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
