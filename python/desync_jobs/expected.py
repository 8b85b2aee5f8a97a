"""Expected outcome of each scenario, written down from how the job was designed.

Nothing here comes from an analyzer's output. Ranks follow from the data and
config each job was given; sequence ids from counting the collectives the
script issues (every Gloo job starts with 4 parameter broadcasts, seq 1-4, for
the 4 parameter tensors of the 16-32-1 MLP); branch lines from the source line
of the construct that sends ranks different ways, located by its exact text in
the script (so edits that move lines keep this correct).

The one value that depends on training dynamics is the early-stopping step
(the first evaluation where the clean "sim" source's validation loss drops
under the target); it is taken from the job's own log line
"rank N: target reached at step S" — the job reporting its own decision.
"""

from __future__ import annotations

import re
from pathlib import Path

N_BROADCASTS = 4  # one dist.broadcast per parameter tensor before training


def _line_of(source: str, text: str) -> int:
    hits = [i for i, line in enumerate(source.splitlines(), start=1) if line.strip() == text]
    if len(hits) != 1:
        raise ValueError(f"expected exactly one line {text!r} in the script, found {hits}")
    return hits[0]


# name -> design. "branch": (exact stripped source line, construct) or None.
# "seq": int, None, or "early_stop" (4 broadcasts + stop step + 1).
DESIGN: dict[str, dict] = {
    "subgroup_member_late": dict(
        category="inconclusive", culprit_ranks=[3], process_group="1", seq=1, branch=None,
        notes="All four ranks create a metrics group (new_group of every rank) at setup. At step "
              "4 rank 3's exporter waits on the host's export lock, held forever by a checkpoint "
              "upload stuck on a dead object-store node, so it never issues the metrics "
              "all_reduce (pg 1 seq 1) that ranks 0-2 block in. Gloo lists no members once "
              "sub-groups exist and rank 3 has no entry of pg 1, so the dumps cannot show that "
              "rank 3 is a member: the honest verdict is inconclusive, naming rank 3 as the rank "
              "that never used the group; never healthy.",
    ),
    "lost_node": dict(
        category="inconclusive", culprit_ranks=[], process_group="0", seq=None, branch=None,
        notes="Two simulated nodes of two ranks; node-local groups from new_subgroups make Gloo "
              "write no member lists. At step 6 the second node's host goes down (ranks 2 and 3 "
              "SIGKILLed, no dump) while ranks 0-1 are in the learning-rate all_reduce. Only "
              "ranks 0-1 left dumps and no record states the world size, so the set cannot be "
              "called healthy: inconclusive, saying the world size is unknown (with "
              "--world-size 4 it is a crash of ranks 2-3).",
    ),
    "reinit_restart": dict(
        category="divergence", culprit_ranks=[2], process_group="0", seq=N_BROADCASTS + 6,
        branch=("continue", "continue"),
        notes="Five warmup steps, then every rank destroys the process group and joins a fresh "
              "one in the same process (collective seqs restart at 1; the recorder keeps the "
              "first group's entries under the same pg name). After the restart rank 2's third "
              "batch holds a NaN: its loss is not finite, it skips the statistics all_reduce via "
              "`continue` and issues step 4's gradient all_reduce at seq 10 of the new group "
              "where its peers reduce statistics.",
    ),
    "healthy": dict(
        category="healthy", culprit_ranks=[], process_group=None, seq=None, branch=None,
        notes="Four ranks issue identical broadcasts, per-step gradient and loss all_reduces, "
              "an all_gather and a barrier; nothing is wrong.",
    ),
    "early_stop": dict(
        category="divergence", culprit_ranks=[3], process_group="0", seq="early_stop",
        branch=("break", "break"),
        notes="Rank 3 trains on the clean 'sim' source, so its own validation loss crosses the "
              "target first and it breaks out of the loop into the final summary all_reduce "
              "while ranks 0-2 issue the next step's gradient all_reduce.",
    ),
    "early_stop_8": dict(
        category="divergence", culprit_ranks=[3, 7], process_group="0", seq="early_stop",
        branch=("break", "break"),
        notes="World size 8: ranks 3 and 7 both get the clean 'sim' source (source = rank % 4), "
              "stop at the same evaluation step and call the summary all_reduce while the six "
              "others issue the next gradient all_reduce.",
    ),
    "extra_collective": dict(
        category="divergence", culprit_ranks=[0], process_group="0",
        seq=N_BROADCASTS + 5 + 1,  # log_every=5: after step 5's gradient all_reduce
        branch=("if rank == 0 and step % args.log_every == 0:", "if"),
        notes="Rank 0 alone issues a logging all_reduce of the loss window every 5 steps, so at "
              "step 5 it waits in that all_reduce while the others are in step 6's gradient "
              "all_reduce.",
    ),
    "json_extra_collective": dict(
        category="divergence", culprit_ranks=[0], process_group="0",
        seq=N_BROADCASTS + 5 + 1,
        branch=None,  # JSON dumps carry no frames, so there is no code to bridge to
        notes="The extra_collective job with JSON dumps (no stack frames): rank 0's extra "
              "logging all_reduce shifts its stream by one collective.",
    ),
    "except_skip": dict(
        category="divergence", culprit_ranks=[2], process_group="0",
        # step s issues the labelled-row count all_reduce (4+2s-1) then the gradient
        # all_reduce (4+2s). Rank 2 skips step 4's gradient all_reduce (seq 12) and
        # issues step 5's count all_reduce there instead.
        seq=N_BROADCASTS + 2 * 4,
        branch=("continue", "continue"),
        notes="Rank 2's shard holds an inf reading at row 100 (step 4); the loss is non-finite, "
              "the except FloatingPointError handler does `continue` and skips that step's "
              "gradient all_reduce, so rank 2 issues the next step's row-count all_reduce "
              "where its peers issue the gradient all_reduce.",
    ),
    "ragged_allgather": dict(
        category="metadata_mismatch", culprit_ranks=[3], process_group="0",
        seq=N_BROADCASTS + 8 + 4,  # 8 training steps, 4th evaluation batch
        branch=("dist.all_gather(gathered, local)", "call"),
        notes="103 validation rows strided over 4 ranks give ranks 0-2 26 rows and rank 3 25 "
              "rows, so with batch size 8 the last evaluation all_gather has 2 rows on ranks 0-2 "
              "and 1 row on rank 3.",
    ),
    "dtype_mismatch": dict(
        category="metadata_mismatch", culprit_ranks=[1], process_group="0",
        seq=N_BROADCASTS + 3 + 1,  # first gradient all_reduce after the 3 warmup steps
        branch=("dist.all_reduce(flat)", "call"),
        notes="Only rank 1's launcher environment sets GRAD_COMM_DTYPE=bf16, so after the fp32 "
              "warmup it all-reduces gradients in BFloat16 while the other ranks use Float.",
    ),
    "stalled_rank": dict(
        category="stall", culprit_ranks=[2], process_group="0",
        seq=N_BROADCASTS + 4,  # step 4's gradient all_reduce, never issued by rank 2
        branch=None,
        notes="Rank 2 blocks reading chunk file part-2-003 from an unresponsive (simulated) NFS "
              "server inside Dataset.__getitem__, so it never issues step 4's gradient "
              "all_reduce that ranks 0, 1 and 3 wait in.",
    ),
    "pg_order": dict(
        category="deadlock", culprit_ranks=[1, 2], process_group=None,
        seq=4,  # each tp and dp group has one all_reduce per step; warmup is 3 steps
        branch=("if step > args.warmup_steps and (tp_rank + dp_rank) % 2 == 1:", "if"),
        notes="After 3 warmup steps ranks 1 and 2 ((tp_rank + dp_rank) odd) reverse the order "
              "of the tp and dp gradient all_reduces, closing the wait cycle 0 -tp-> 1 -dp-> 3 "
              "-tp-> 2 -dp-> 0 at seq 4 of every subgroup.",
    ),
    "crash": dict(
        category="crash", culprit_ranks=[1], process_group="0",
        seq=N_BROADCASTS + 5,  # step 5's gradient all_reduce
        branch=None,
        notes="Rank 1's shard has a torn record (row 130, step 5) whose header offset points "
              "outside the buffer; the ctypes zero-copy decoder segfaults, rank 1 dies without a "
              "dump while its peers wait in step 5's gradient all_reduce.",
    ),
    "straggler": dict(
        category="straggler", culprit_ranks=[2], process_group="0", seq=None, branch=None,
        notes="Rank 2's shard sits on the cold storage tier and pays 250 ms per batch, so it is "
              "the last to enqueue every gradient all_reduce; every collective completes.",
    ),
    "skip_report": dict(
        category="divergence", culprit_ranks=[1], process_group="1",
        seq=1,  # the metrics group's first all_reduce; no parameter broadcasts in this job
        branch=("if not torch.isfinite(loss):", "if"),
        notes="Rank 1's node mounts the glitched data export: its step-6 batch holds a NaN, the "
              "loss is non-finite, and it reports the skip with an all_reduce on the metrics "
              "group that no other rank issues, then waits there; ranks 0, 2, 3 wait in step 6's "
              "gradient all_reduce (default group seq 7) for rank 1: a wait cycle across groups, "
              "but no order inversion: no other rank ever used the metrics group, so it is "
              "rank 1's divergence (labelled deadlock before issue 42 item 4).",
    ),
    "healthy_long": dict(
        category="healthy", culprit_ranks=[], process_group=None, seq=None, branch=None,
        notes="The skip_report job with clean data on every rank: 40 steps of 0.3 s, one "
              "gradient all_reduce each, then a barrier; nothing is wrong.",
    ),
    "nccl_h100_healthy": dict(
        category="healthy", culprit_ranks=[], process_group=None, seq=None, branch=None,
        notes="Real NCCL dump from one H100 (world size 1): many op kinds, all completed.",
    ),
    "nccl_h100_healthy_json": dict(
        category="healthy", culprit_ranks=[], process_group=None, seq=None, branch=None,
        notes="The same healthy H100 run dumped as JSON.",
    ),
    "nccl_h100_hang": dict(
        category="gpu_hang", culprit_ranks=[0], process_group="0", seq=6, branch=None,
        notes="World size 1 on an H100: all_reduce seq 6 was enqueued but never started or "
              "completed while seq 1-5 completed; the watchdog timed out and dumped "
              "(see hang.log.head).",
    ),
}


def stop_step_from_logs(log_dir: Path, culprits: list[int]) -> int:
    """The early-stopping step reported by the stopping ranks' own logs."""
    steps = {}
    for log in sorted(Path(log_dir).glob("rank_*.log")):
        for m in re.finditer(r"rank (\d+): target reached at step (\d+)", log.read_text(errors="replace")):
            steps[int(m.group(1))] = int(m.group(2))
    if sorted(steps) != sorted(culprits):
        raise ValueError(f"expected ranks {culprits} to stop early, logs say {steps}")
    if len(set(steps.values())) != 1:
        raise ValueError(f"early-stopping ranks stopped at different steps: {steps}")
    return next(iter(steps.values()))


def expected_for(name: str, script: Path | None = None, log_dir: Path | None = None) -> dict:
    design = DESIGN[name]
    seq = design["seq"]
    if seq == "early_stop":
        seq = None if log_dir is None else N_BROADCASTS + stop_step_from_logs(
            log_dir, design["culprit_ranks"]) + 1
    branch = None
    if design["branch"] is not None:
        if script is None:
            raise ValueError(f"{name}: the script is needed to locate the branch line")
        text, construct = design["branch"]
        branch = {"file": "train.py", "line": _line_of(Path(script).read_text(), text),
                  "construct": construct}
    return {
        "category": design["category"],
        "culprit_ranks": design["culprit_ranks"],
        "process_group": design["process_group"],
        "collective_seq_id": seq,
        "branch": branch,
        "notes": design["notes"],
    }
