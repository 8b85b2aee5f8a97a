# expect: DSY005 at line 23
"""A keyword argument is not agreement by itself: `all_gather(tensor_list=..., tensor=x)` fills
the list, and leaves `x`, the rank's own input, as it was. The helper returns that input, whose
length is each rank's count of kept predictions, and the caller gathers it as if it were the
same size everywhere."""
import torch
import torch.distributed as dist


def share_and_keep(x, world):
    parts = [torch.empty(1) for _ in range(world)]
    dist.all_gather(tensor_list=parts, tensor=x.sum().reshape(1))
    return x


def evaluate(model, loader, world):
    kept = []
    for batch in loader:
        scores = model(batch)
        kept.append(scores[scores > 0.5])
    local = share_and_keep(torch.cat(kept), world)
    gathered = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(gathered, local)
    return gathered
