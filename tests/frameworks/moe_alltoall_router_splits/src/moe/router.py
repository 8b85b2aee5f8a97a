"""Top-1 router with an expert capacity (GShard-style token dropping)."""

import math

import torch
from torch import nn


class Top1Router(nn.Module):
    def __init__(self, d_model: int, num_experts: int, capacity_factor: float):
        super().__init__()
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.num_experts = num_experts
        self.capacity_factor = capacity_factor

    def capacity(self, n_tokens: int) -> int:
        """Most tokens one expert takes from one source rank in this batch."""
        return math.ceil(self.capacity_factor * n_tokens / self.num_experts)

    def forward(self, h: torch.Tensor):
        probs = self.gate(h).softmax(dim=-1)
        weight, expert = probs.max(dim=-1)
        return weight, expert
