"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from audio.clips import clip_batches
from audio.model import EventClassifier
from checkpoint.export import export_for_serving
from config import parse


def main():
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = EventClassifier()
    for stage in model.stages:
        fully_shard(stage, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step, (mel, events) in enumerate(clip_batches(rank, args.batch_size, args.steps), start=1):
        loss = F.cross_entropy(model(mel), events)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % args.export_every == 0:
            export_for_serving(model, args.export_path, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
