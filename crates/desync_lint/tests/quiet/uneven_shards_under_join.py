"""Fine-tuning on a file list strided by the rank, so the shards differ by one file, under
DDP's join context: the ranks that run out of files shadow the gradient all_reduce of the
others until every rank has joined, which is what `join` is for."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_on_files(net, files, optimizer):
    rank = dist.get_rank()
    world = dist.get_world_size()
    model = DDP(net)
    mine = files[rank::world]
    with model.join():
        for path in mine:
            batch = torch.load(path, weights_only=True)
            loss = model(batch["x"]).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
