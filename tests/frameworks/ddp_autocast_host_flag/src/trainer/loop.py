import torch
import torch.nn.functional as F

from model.ctr import impressions
from trainer.drift import PredictionDrift
from trainer.precision import autocast_for


def train(model, optimizer, cfg, rank: int, world_size: int) -> None:
    g = torch.Generator().manual_seed(100 + rank)
    drift = PredictionDrift(world_size)
    amp = autocast_for(cfg)
    for step in range(1, cfg.steps + 1):
        ids, clicked = impressions(cfg.batch_size, g)
        with amp:
            logits = model(ids)
        loss = F.binary_cross_entropy_with_logits(logits.float(), clicked)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        drift.observe(logits)
        if step % cfg.drift_every == 0:
            mean_ctr = drift.report()
            if rank == 0:
                print(f"step {step}: mean predicted CTR {mean_ctr.mean().item():.4f}", flush=True)
