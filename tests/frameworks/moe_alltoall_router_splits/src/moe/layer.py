"""A mixture-of-experts feed-forward layer, one expert per rank (expert parallelism)."""

import logging

import torch
import torch.distributed as dist
from torch import nn

from moe.comm import AllToAll, exchange_counts
from moe.router import Top1Router

log = logging.getLogger(__name__)


class Expert(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x):
        return self.ff(x)


class MoELayer(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_experts: int, capacity_factor: float,
                 expert_seed: int):
        super().__init__()
        self.router = Top1Router(d_model, num_experts, capacity_factor)
        self.num_experts = num_experts
        with torch.random.fork_rng():
            torch.manual_seed(expert_seed)
            self.expert = Expert(d_model, d_ff)  # this rank's expert, not replicated

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        tokens = h[mask]                      # real tokens only, [n, d]
        weight, expert = self.router(tokens)
        order = torch.argsort(expert, stable=True)
        counts = torch.bincount(expert, minlength=self.num_experts)
        capacity = self.router.capacity(tokens.shape[0])
        recv_counts = exchange_counts(counts)
        # drop tokens over an expert's capacity at the source, and expect the same from peers
        send_splits = counts.clamp(max=capacity)
        recv_splits = recv_counts.clamp(max=capacity)
        keep = torch.cat([order[counts[:e].sum():counts[:e].sum() + send_splits[e]]
                          for e in range(self.num_experts)])
        log.info("rank %d: %d tokens, capacity %d, sending %s, expecting %s", dist.get_rank(),
                 tokens.shape[0], capacity, send_splits.tolist(), recv_splits.tolist())
        received = AllToAll.apply(tokens[keep], recv_splits.tolist(), send_splits.tolist())
        processed = AllToAll.apply(self.expert(received), send_splits.tolist(),
                                   recv_splits.tolist())
        out = torch.zeros_like(tokens)
        out[keep] = processed * weight[keep, None]
        mixed = torch.zeros_like(h)
        mixed[mask] = out
        return mixed
