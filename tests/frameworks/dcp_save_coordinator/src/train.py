"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from ckpt.manager import CheckpointManager
from config import parse
from nets.tabular import TabularNet


def batches(rank, batch_size, steps):
    g = torch.Generator().manual_seed(50 + rank)
    for _ in range(steps):
        x = torch.randn(batch_size, 24, generator=g)
        yield x, x[:, :3].argmax(1)


def main():
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = TabularNet()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    checkpoints = CheckpointManager(args.checkpoint_dir, args.save_every)
    for step, (x, y) in enumerate(batches(rank, args.batch_size, args.steps), start=1):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        checkpoints.maybe_save(model, optimizer, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
