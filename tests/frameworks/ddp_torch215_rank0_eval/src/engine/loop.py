"""The training loop: epochs of DDP steps, a holdout report after each."""

import torch.nn.functional as F

from engine.evaluate import evaluate


def fit(model, optimizer, train_loader, holdout_loader, sampler, cfg, rank: int) -> None:
    for epoch in range(cfg.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(train_loader):
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(f"rank {rank}: epoch {epoch} trained {step + 1} steps", flush=True)
        if rank == 0:  # report once, from the main process
            metrics = evaluate(model.module, holdout_loader)
            print(f"epoch {epoch}: holdout loss {metrics['loss']:.4f} acc {metrics['acc']:.3f}",
                  flush=True)
