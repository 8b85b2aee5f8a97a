# expect: DSY001 at line 10
# expect: DSY002 at line 25
"""A wrapper that reduces only on rank 0 agrees nothing: the ranks whose loader ran out
leave the loop while the others wait in the next reduction."""
import torch
import torch.distributed as dist


def all_reduce(tensor, reduce_operation="SUM"):
    if dist.get_rank() == 0:
        reduce_op = getattr(dist.ReduceOp, reduce_operation.upper())
        dist.all_reduce(tensor, op=reduce_op)


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
