"""accelerate launch --cpu --num_processes 4 train.py"""

import itertools
from datetime import timedelta

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, ProjectConfiguration, set_seed
from torch.utils.data import DataLoader

from config import get_config
from recsys.interactions import click_log
from recsys.towers import TwoTower
from utils.checkpointing import maybe_checkpoint


def main():
    cfg = get_config()
    accelerator = Accelerator(
        cpu=True,
        project_config=ProjectConfiguration(project_dir=cfg.output_dir,
                                            automatic_checkpoint_naming=True, total_limit=3),
        kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))],
    )
    set_seed(cfg.seed)
    model = TwoTower(cfg.users, cfg.items, cfg.dim)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    loader = DataLoader(click_log(cfg.users, cfg.items, cfg.interactions, cfg.seed),
                        batch_size=cfg.batch_size, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    batches = itertools.cycle(loader)
    for step in range(1, cfg.max_steps + 1):
        users, items, clicked = next(batches)
        loss = F.binary_cross_entropy_with_logits(model(users, items), clicked)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        maybe_checkpoint(accelerator, step, cfg.checkpoint_every)
    accelerator.print("done")
    accelerator.end_training()


if __name__ == "__main__":
    main()
