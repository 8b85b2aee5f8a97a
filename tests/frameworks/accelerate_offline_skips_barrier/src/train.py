"""accelerate launch --cpu --multi_gpu --num_machines 3 --num_processes 6 train.py"""

from datetime import timedelta

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from torch.utils.data import DataLoader

from config import parse
from data.features import feature_table
from trainer.loop import fit


def main():
    cfg = parse()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))])
    torch.manual_seed(cfg.seed)
    dataset = feature_table(accelerator, cfg)
    model = torch.nn.Sequential(torch.nn.Linear(cfg.features, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    print(f"[process {accelerator.process_index}] prepared", flush=True)
    fit(accelerator, model, optimizer, loader, cfg.epochs)
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
