"""torchrun --nnodes 2 --nproc-per-node 2 train.py"""

import argparse

import torch
import torch.nn.functional as F

from cluster_config import host_config
from kws.features import keyword_loader
from kws.model import KeywordNet
from launch.distributed import init, wrap_model


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--clips", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args()


def main():
    args = parse()
    rank = init(args.dist_timeout_s)
    host = host_config()
    torch.manual_seed(0)
    model = wrap_model(KeywordNet(), host)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loader = keyword_loader(args.clips, args.batch_size, seed=0)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for spectra, labels in loader:
            loss = F.cross_entropy(model(spectra), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"rank {rank} epoch {epoch}: last loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
