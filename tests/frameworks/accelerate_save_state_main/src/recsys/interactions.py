"""Implicit feedback: a user clicks items whose hidden taste matches theirs."""

import torch
from torch.utils.data import TensorDataset


def click_log(users: int, items: int, count: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    user_taste = torch.randn(users, 4, generator=g)
    item_taste = torch.randn(items, 4, generator=g)
    u = torch.randint(0, users, (count,), generator=g)
    i = torch.randint(0, items, (count,), generator=g)
    clicked = ((user_taste[u] * item_taste[i]).sum(-1) > 0).float()
    return TensorDataset(u, i, clicked)
