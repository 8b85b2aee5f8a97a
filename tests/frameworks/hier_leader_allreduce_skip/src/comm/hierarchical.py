"""Two-level all-reduce: reduce inside the node, all-reduce between node leaders, broadcast back.

Only one process per node talks across nodes, which is what makes it cheap on slow links.
"""

import torch
import torch.distributed as dist


def hierarchical_all_reduce(flat: torch.Tensor, topo) -> torch.Tensor:
    dist.reduce(flat, dst=topo.leader, group=topo.node_group)
    if topo.is_leader:
        dist.all_reduce(flat, group=topo.leader_group)
    dist.broadcast(flat, src=topo.leader, group=topo.node_group)
    return flat


def average_gradients(model, topo) -> None:
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.flatten() for g in grads])
    hierarchical_all_reduce(flat, topo)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
