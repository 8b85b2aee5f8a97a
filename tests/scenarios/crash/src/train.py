"""Data-parallel regression reading length-prefixed binary records.

Records are decoded zero-copy: a small header gives the payload offset and the
number of float32 values, and the payload is read in place with ctypes.
"""

import argparse
import ctypes
import struct

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
HEADER = struct.Struct("<QI")  # payload offset, float count


def write_records(shard, n):
    """Serialise a shard the way the preprocessing job wrote it to disk."""
    g = torch.Generator().manual_seed(4242 + shard)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    records = []
    for i in range(n):
        x = torch.randn(FEATURES, generator=g)
        y = float(x @ w) + 0.1 * float(torch.randn(1, generator=g))
        payload = struct.pack(f"<{FEATURES + 1}f", *x.tolist(), y)
        offset = HEADER.size
        if shard == 1 and i == 130:
            # A torn write in this shard: the header of one record was left
            # holding the previous block's absolute file offset.
            offset = 0x7F3A_0000_0000
        records.append(bytearray(HEADER.pack(offset, FEATURES + 1) + payload))
    return records


def decode(record):
    offset, count = HEADER.unpack_from(record)
    base = ctypes.addressof((ctypes.c_char * len(record)).from_buffer(record))
    values = struct.unpack(f"<{count}f", ctypes.string_at(base + offset, 4 * count))
    return torch.tensor(values[:-1]), torch.tensor(values[-1:])


class RecordShard(Dataset):
    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, idx):
        return decode(self.records[idx])


def build_model():
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))


def broadcast_parameters(model):
    for p in model.parameters():
        dist.broadcast(p.data, src=0)


def allreduce_gradients(model, world_size):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    shard = RecordShard(write_records(rank, args.steps * args.batch_size))
    loader = DataLoader(shard, batch_size=args.batch_size)
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
