"""One pass over the rank's token stream."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def run_epoch(model, optimizer, stream, rank):
    tokens_done = 0
    steps = 0
    total = torch.zeros(1)
    while tokens_done < stream.epoch_tokens:
        batch = stream.next_batch()
        logits = model(batch[:-1])
        loss = F.cross_entropy(logits, batch[1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tokens_done += len(batch)
        steps += 1
        total += loss.detach()
    print(f"rank {rank}: stream done after {steps} steps", flush=True)
    dist.all_reduce(total)
    return total.item()
