import math

from engine.sync import allreduce_grads, global_mean


def train(schedule, module, optimizer, topo, data) -> int:
    updates = 0
    for step, (x, y) in enumerate(data, start=1):
        optimizer.zero_grad(set_to_none=True)
        if topo.stage == 0:
            schedule.step(x)
        else:
            losses = []
            schedule.step(target=y, losses=losses)
            local = float(sum(l.item() for l in losses) / len(losses))
            print(f"rank {topo.rank}: step {step} loss {global_mean(local, topo.dp_group):.4f}",
                  flush=True)
            if not math.isfinite(local):
                print(f"rank {topo.rank}: step {step}: non-finite loss, skipping update",
                      flush=True)
                continue
        allreduce_grads(module, topo.dp_group)
        optimizer.step()
        updates += 1
    return updates
