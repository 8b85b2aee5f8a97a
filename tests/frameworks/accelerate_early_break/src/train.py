"""accelerate launch --cpu --num_processes 4 train.py --target-loss 0.02"""

from datetime import timedelta

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from torch.utils.data import DataLoader

from config import parse
from datasets.shards import calibration_shard
from trainer.loop import fit


def main():
    cfg = parse()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))])
    torch.manual_seed(cfg.seed)
    shard = calibration_shard(accelerator.process_index, cfg.rows_per_shard, cfg.features,
                              cfg.seed)
    loader = DataLoader(shard, batch_size=cfg.batch_size, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(cfg.features, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    model, optimizer = accelerator.prepare(model, optimizer)

    steps = fit(accelerator, model, optimizer, loader, cfg)
    accelerator.wait_for_everyone()
    accelerator.print(f"training finished after {steps} steps")
    accelerator.end_training()


if __name__ == "__main__":
    main()
