"""A PPO-style loop over a fixed number of steps, with a progress bar only rank 0 shows
(`disable=not is_main`): the bar yields the same `range(max_steps)` on every rank, so the step
counter, and the periodic checkpoint whose state dict gathers across ranks, agree."""
import torch.distributed as dist
from tqdm import tqdm


def train(model, optimizer, batches, max_steps, save_steps, save):
    is_main = dist.get_rank() == 0
    for step in tqdm(range(max_steps), disable=not is_main, desc="ppo"):
        loss = model(next(batches)).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        if (step + 1) % save_steps == 0:
            state = {k: v.clone() for k, v in model.state_dict().items()}
            dist.barrier()
            if is_main:
                save(state)
