import math

import torch.nn.functional as F

from engine.metrics import global_mean, replica_mean


def train(model, optimizer, batches, topo, rank: int):
    updates = 0
    for step, (x, y) in enumerate(batches, start=1):
        loss = F.mse_loss(model(x), y)
        plant_loss = replica_mean(loss, topo)
        if not math.isfinite(plant_loss):
            print(f"rank {rank}: step {step}: plant loss not finite, skipping", flush=True)
            continue
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        updates += 1
        print(f"rank {rank}: step {step} loss {global_mean(plant_loss):.3f}", flush=True)
    return updates
