"""Sliding windows over each machine's vibration trace; a rank reads its own machine."""

import torch
from torch.utils.data import DataLoader, TensorDataset

# Machines in the fleet; the test rig (machine 2) is a clean simulated signal.
MACHINES = [("press-a", 0.4), ("press-b", 0.5), ("rig-sim", 0.0), ("press-c", 0.45)]


def machine_trace(machine, length, seed):
    name, noise = MACHINES[machine]
    g = torch.Generator().manual_seed(seed + 17 * machine)
    t = torch.arange(length, dtype=torch.float32)
    return torch.sin(t / 7.0) + 0.3 * torch.sin(t / 3.0) + noise * torch.randn(length, generator=g)


def window_loader(rank, cfg):
    trace = machine_trace(rank % len(MACHINES), 4096, cfg.seed)
    x = trace.unfold(0, cfg.window + 1, 1)
    windows, targets = x[:, :-1], x[:, -1]
    g = torch.Generator().manual_seed(cfg.seed + rank)
    return DataLoader(TensorDataset(windows, targets), batch_size=cfg.batch_size, shuffle=True,
                      generator=g, drop_last=True)
