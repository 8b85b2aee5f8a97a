import torch
import torch.distributed as dist
import torch.nn.functional as F

from comm.hierarchical import average_gradients


def train(model, optimizer, batches, topo, cfg) -> int:
    steps_done = 0
    for step, (x, y, valid) in enumerate(batches, start=1):
        if not valid.any():
            print(f"rank {topo.rank}: step {step}: no valid rows (maintenance), skipping",
                  flush=True)
            continue
        loss = F.binary_cross_entropy_with_logits(model(x[valid]), y[valid])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        average_gradients(model, topo)
        optimizer.step()
        steps_done += 1
        if step % cfg.log_every == 0:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            if topo.rank == 0:
                print(f"step {step}: mean loss {float(mean) / dist.get_world_size():.4f}",
                      flush=True)
    return steps_done
