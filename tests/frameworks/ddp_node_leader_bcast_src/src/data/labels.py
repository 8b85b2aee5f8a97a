"""The intent label map: read by one process, shared with the rest."""

import torch.distributed as dist

INTENTS = ["balance", "transfer", "card_lost", "dispute", "limit", "statement", "close", "agent"]


def _read_label_map(host_tag: str) -> dict:
    # The export on each host's scratch disk; one process reads it.
    return {"version": host_tag, "intents": {name: i for i, name in enumerate(INTENTS)}}


def shared_label_map(topo) -> dict:
    payload = [None]
    if topo.local_rank == 0:
        payload[0] = _read_label_map(f"host-of-rank-{topo.rank}")
    dist.broadcast_object_list(payload, src=topo.node_leader)
    return payload[0]
