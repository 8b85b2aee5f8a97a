"""Communication dtypes that are the same on every rank: constants and configuration."""
import torch
import torch.distributed as dist


def allreduce_gradients(grads, comm_dtype):
    flat = torch.cat([g.reshape(-1) for g in grads]).to(comm_dtype)
    dist.all_reduce(flat)
    return flat.float()


def train(model, loader, args, device):
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    for step, batch in enumerate(loader):
        grads = [p.grad.to(device) for p in model.parameters()]
        allreduce_gradients(grads, dtype)
        allreduce_gradients(grads, torch.float32 if step < args.warmup else dtype)
