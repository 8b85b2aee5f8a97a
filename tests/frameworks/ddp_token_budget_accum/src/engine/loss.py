import torch.distributed as dist
import torch.nn.functional as F


def token_mean_loss(logits, targets, mask):
    """Cross-entropy averaged over every real token of this micro-batch on all ranks.

    DDP averages gradients over ranks, so the sum is scaled by the world size: a rank
    with more tokens in its micro-batch weighs more, as it would in a single batch.
    """
    n_tokens = mask.sum()
    dist.all_reduce(n_tokens)  # tokens in this micro-batch, all ranks together
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    return (per_token * mask.flatten()).sum() * dist.get_world_size() / n_tokens
