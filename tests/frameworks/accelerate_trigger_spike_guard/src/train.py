"""accelerate launch --cpu --num_processes 4 train.py"""

from datetime import timedelta

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from torch.utils.data import DataLoader

from config import parse
from data.telemetry import telemetry_shard
from guards.spike import SpikeGuard
from trainer.loop import fit


def main():
    cfg = parse()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))])
    torch.manual_seed(cfg.seed)
    shard = telemetry_shard(accelerator.process_index, cfg.rows_per_shard, cfg.features, cfg.seed)
    loader = DataLoader(shard, batch_size=cfg.batch_size, shuffle=False)
    model = torch.nn.Sequential(torch.nn.Linear(cfg.features, 24), torch.nn.Tanh(),
                                torch.nn.Linear(24, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    model, optimizer = accelerator.prepare(model, optimizer)
    guard = SpikeGuard(accelerator, cfg.spike_factor, cfg.warmup_steps)

    steps = fit(accelerator, model, optimizer, loader, guard)
    accelerator.wait_for_everyone()
    accelerator.print(f"training finished after {steps} steps")
    accelerator.end_training()


if __name__ == "__main__":
    main()
