# expect: DSY004 at line 16
# expect: DSY002 at line 20
"""Rank 0 computes a list of solutions and other ranks a list of their own; nothing is
broadcast before the loop, whose barrier then runs as many times as each rank's own list
is long."""
import torch
import torch.distributed as dist


def solve(problem, rank):
    return [problem * i for i in range(problem + rank)]


def realize(problem, device, model):
    rank = dist.get_rank()
    if rank == 0:
        solutions = solve(problem, 0)
    else:
        solutions = solve(problem, rank)
    for solution in solutions:
        dist.barrier()
        model.apply(solution)
