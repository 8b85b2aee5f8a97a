"""torchrun --nproc-per-node 4 train.py [--config ctr.json]"""

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from config import describe, load
from ctr.data import COLD_START_ROWS, ImpressionDataset, impressions
from ctr.model import CTRModel
from engine import dist as cluster
from engine.checkpoint import BestKeeper
from engine.loop import fit


def main():
    cfg = load()
    rank, world = cluster.init(cfg.timeout_s)
    torch.manual_seed(cfg.seed)
    if cluster.is_main():
        print(f"config: {describe(cfg)}", flush=True)
    train_set = ImpressionDataset(impressions(cfg.train_rows, cfg.known_users, cfg.items, cfg.seed))
    eval_set = ImpressionDataset(impressions(cfg.eval_rows, cfg.known_users, cfg.items, cfg.seed + 1,
                                             cold_rows=COLD_START_ROWS))
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size,
                              sampler=DistributedSampler(train_set, world, rank, seed=cfg.seed))
    eval_loader = DataLoader(eval_set, batch_size=cfg.batch_size,
                             sampler=DistributedSampler(eval_set, world, rank, shuffle=False))
    model = DistributedDataParallel(CTRModel(cfg.known_users, cfg.items, cfg.emb_dim))
    opt = torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    fit(model, train_loader, eval_loader, opt, BestKeeper(cfg.ckpt_path), cfg, rank)
    if cluster.is_main():
        print("training complete", flush=True)


if __name__ == "__main__":
    main()
