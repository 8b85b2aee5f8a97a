"""Rank 0 computes a list of solutions; its length is broadcast in a tensor, receivers build a
list of that many `None`s, and the list is broadcast object by object. The loop that follows
walks the received list: the same length on every rank."""
import torch
import torch.distributed as dist


def solve(problem):
    return [problem * i for i in range(problem)]


def realize(problem, device, model):
    rank = dist.get_rank()
    if rank == 0:
        solutions = solve(problem)
        count = torch.tensor([len(solutions)], device=device)
    else:
        solutions = None
        count = torch.tensor([0], device=device)
    dist.broadcast(count, src=0)
    if rank != 0:
        solutions = [None] * int(count.item())
    dist.broadcast_object_list(solutions, src=0)
    for solution in solutions:
        dist.barrier()
        model.apply(solution)
