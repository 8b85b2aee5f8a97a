"""Multi-GPU GraphSAGE training with neighbour sampling, one process per GPU.

The training seed nodes are split into `n_gpus` chunks of ceil(N / n_gpus) nodes; the last
chunk is shorter, so with some sizes it yields fewer mini-batches. The GPU with fewer
batches leaves the epoch early while the others wait in DDP's gradient all_reduce.
"""
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def make_batches(seeds, batch_size, sampler):
    perm = seeds[torch.randperm(len(seeds))]
    for start in range(0, len(perm), batch_size):
        yield sampler.sample_blocks(perm[start:start + batch_size])


def run(proc_id, n_gpus, graph, train_nid, sampler, model, args):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:12345", world_size=n_gpus, rank=proc_id)
    torch.cuda.set_device(proc_id)
    model = DistributedDataParallel(model.to(proc_id), device_ids=[proc_id])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_nid = torch.split(train_nid, math.ceil(len(train_nid) / n_gpus))[proc_id]
    for epoch in range(args.num_epochs):
        model.train()
        for input_nodes, seeds, blocks in make_batches(train_nid, args.batch_size, sampler):  # BUG: batch count differs per GPU
            feats = graph.ndata["feat"][input_nodes].to(proc_id)
            labels = graph.ndata["label"][seeds].to(proc_id)
            loss = F.cross_entropy(model(blocks, feats), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()
