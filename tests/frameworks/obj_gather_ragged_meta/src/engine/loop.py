"""The training loop."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from engine.metrics import evaluate


def train_epoch(model, loader, opt, epoch: int, log_every: int, rank: int):
    running = torch.zeros(1)
    for step, (_, user, item, clicked, _) in enumerate(loader, start=1):
        loss = F.binary_cross_entropy_with_logits(model(user, item), clicked)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.detach()
        if step % log_every == 0:
            dist.all_reduce(running)
            if rank == 0:
                print(f"epoch {epoch} step {step}: loss {running.item() / (log_every * dist.get_world_size()):.4f}",
                      flush=True)
            running.zero_()


def fit(model, train_loader, eval_loader, opt, keeper, cfg, rank: int):
    for epoch in range(cfg.epochs):
        train_loader.sampler.set_epoch(epoch)
        train_epoch(model, train_loader, opt, epoch, cfg.log_every, rank)
        print(f"rank {rank}: epoch {epoch} trained, evaluating", flush=True)
        result = evaluate(model, eval_loader)
        print(f"rank {rank}: epoch {epoch} logloss {result['logloss']:.4f}, "
              f"{len(result['cold_start'])} cold-start rows in report", flush=True)
        keeper.update(model, result["logloss"], epoch)
