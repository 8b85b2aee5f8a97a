"""accelerate launch --cpu --num_processes 4 train.py"""

from datetime import timedelta

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, set_seed
from torch.utils.data import DataLoader

from config import parse
from engine.evaluate import evaluate
from engine.train_loop import train_one_epoch
from wafers.data import CLASSES, inspection_set
from wafers.model import DefectClassifier


def main():
    cfg = parse()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))])
    set_seed(cfg.seed)
    train_set = inspection_set(cfg.train_wafers, cfg.features, cfg.seed)
    holdout = inspection_set(cfg.holdout_wafers, cfg.features, cfg.seed + 1)
    model = DefectClassifier(cfg.features, cfg.hidden, len(CLASSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    train_loader = DataLoader(train_set, batch_size=cfg.train_batch, shuffle=True)
    eval_loader = DataLoader(holdout, batch_size=cfg.eval_batch)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(
        model, optimizer, train_loader, eval_loader)

    best = -1.0
    for epoch in range(cfg.epochs):
        loss = train_one_epoch(accelerator, model, optimizer, train_loader)
        recall = evaluate(accelerator, model, eval_loader)
        accelerator.print(f"epoch {epoch}: train loss {loss:.3f}, recall {recall}")
        accelerator.wait_for_everyone()
        if accelerator.is_main_process and recall["scratch"] > best:
            best = recall["scratch"]
            accelerator.save(accelerator.unwrap_model(model).state_dict(), "defects.pt")
    accelerator.end_training()


if __name__ == "__main__":
    main()
