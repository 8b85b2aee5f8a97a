# expect: DSY006 at line 13
# expect: DSY006 at line 25
"""The same random choice, but the autocast block holds a collective (directly, and through a
generator helper whose caller runs the gather inside the yielded block): the chosen ranks send
bfloat16 where their peers send float32."""
import contextlib

import torch
import torch.distributed as dist


def act(policy, obs, epsilon):
    if torch.rand(1).item() >= epsilon:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = policy(obs)
            dist.all_reduce(logits)
    else:
        logits = policy(obs)
        dist.all_reduce(logits)
    return logits.argmax(dim=-1)


@contextlib.contextmanager
def maybe_low_precision(p):
    if torch.rand(1).item() < p:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            yield
    else:
        yield


def gather(policy, obs, p):
    with maybe_low_precision(p):
        out = policy(obs)
        dist.all_reduce(out)
    return out
