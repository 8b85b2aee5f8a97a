"""A project's own `all_reduce` wrapper that reduces in place only when the job runs
distributed (a single process has nobody to disagree with): a flag passed through it is
agreed, so breaking on it is a decision every rank takes together."""
import torch
import torch.distributed as dist


def all_reduce(tensor, reduce_operation="SUM", group=None):
    if dist.is_available() and dist.is_initialized():
        reduce_op = getattr(dist.ReduceOp, reduce_operation.upper())
        dist.all_reduce(tensor, op=reduce_op, group=group)
        return
    return


def iterate(loader):
    it = iter(loader)
    while True:
        finished = torch.zeros(1)
        try:
            batch = next(it)
        except StopIteration:
            finished += 1
        all_reduce(finished, reduce_operation="MAX")
        if finished.item() == 1:
            break
        yield batch
