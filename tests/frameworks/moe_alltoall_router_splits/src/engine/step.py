import torch
import torch.distributed as dist
import torch.nn.functional as F


def average_dense_grads(model) -> None:
    """One all_reduce over every replicated parameter's gradient (flattened), then average."""
    params = [p for p in model.dense_parameters() if p.grad is not None]
    flat = torch.cat([p.grad.flatten() for p in params])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
        offset += p.numel()


def train_step(model, optimizer, tokens, mask) -> float:
    logits = model(tokens[:, :-1], mask[:, :-1])
    targets = tokens[:, 1:].masked_fill(~mask[:, 1:], -100)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    average_dense_grads(model)
    optimizer.step()
    return loss.item()
