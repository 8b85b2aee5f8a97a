"""Exploration picks some ranks at random to act under autocast; the block holds one forward
for action selection and no collective, and the autocast ends with it: the gradient all_reduce
later runs outside every such block."""
import torch
import torch.distributed as dist


def act(policy, obs, epsilon):
    explore = torch.rand(1).item() >= epsilon
    if explore:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            action = policy(obs).argmax(dim=-1)
    else:
        action = torch.randint(0, 4, (obs.shape[0],))
    return action


def update(model, loss):
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
