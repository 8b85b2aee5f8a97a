"""accelerate launch --cpu --num_processes 4 train.py"""

from datetime import timedelta

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, set_seed
from torch.utils.data import DataLoader, TensorDataset

from config import parse_settings
from forecast.evaluation import holdout_mape
from forecast.model import build_forecaster
from forecast.series import holdout_shard, load_curves


def main():
    cfg = parse_settings()
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(timeout=timedelta(seconds=cfg.dist_timeout_s))])
    set_seed(cfg.seed)
    x, y = load_curves(cfg.train_series, cfg.lookback, cfg.seed)
    hx, hy = load_curves(cfg.holdout_series, cfg.lookback, cfg.seed + 1)
    hx, hy = holdout_shard(hx, hy, accelerator.process_index, accelerator.num_processes)
    model = build_forecaster(cfg.lookback)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg.batch_size * 4, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    for epoch in range(cfg.epochs):
        for inputs, target in loader:
            loss = F.mse_loss(model(inputs), target)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        mape = holdout_mape(accelerator, model, hx, hy, cfg.batch_size)
        accelerator.print(f"epoch {epoch}: holdout MAPE {mape:.4f}")
    accelerator.end_training()


if __name__ == "__main__":
    main()
