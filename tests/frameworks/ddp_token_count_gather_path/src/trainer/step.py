"""One optimizer step with a token-weighted loss (every token counts the same,
whichever rank it landed on)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from lm.data import PAD


def train_step(model, opt, inputs, targets):
    local_tokens = (targets != PAD).sum()
    global_tokens = local_tokens.clone()
    dist.all_reduce(global_tokens)
    logits = model(inputs)
    loss_sum = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=PAD, reduction="sum")
    # DDP averages gradients over ranks; scale so the result is the mean over all tokens
    loss = loss_sum * dist.get_world_size() / global_tokens
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss_sum.detach(), int(local_tokens), int(global_tokens)
