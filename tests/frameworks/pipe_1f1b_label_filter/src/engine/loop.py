from engine.sync import allreduce_grads, global_mean


def train(pool, module, optimizer, topo, data) -> int:
    updates = 0
    for step, (x, y) in enumerate(data, start=1):
        optimizer.zero_grad(set_to_none=True)
        if topo.stage == 0:
            n_micro = pool.microbatches(len(x))
            pool.get(n_micro).step(x[: n_micro * pool.micro_size])
        else:
            n_micro = pool.microbatches(len(y))
            losses = []
            pool.get(n_micro).step(target=y[: n_micro * pool.micro_size], losses=losses)
            local = float(sum(l.item() for l in losses) / len(losses))
            print(f"rank {topo.rank}: step {step} ({n_micro} microbatches) loss "
                  f"{global_mean(local, topo.dp_group):.4f}", flush=True)
        allreduce_grads(module, topo.dp_group)
        optimizer.step()
        updates += 1
    return updates
