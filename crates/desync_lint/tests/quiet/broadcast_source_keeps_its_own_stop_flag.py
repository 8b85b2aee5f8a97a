"""Early stopping decided on the main process and sent to the others: the main process puts
its flag into a list, broadcasts it, and only the receivers take the flag from the list (the
source already holds what it sent). After the `if`, every rank holds the main process's flag,
so the `break` is taken by all of them at the same epoch."""
import os

import torch.distributed as dist

RANK = int(os.getenv("RANK", -1))


def train(model, loader, optimizer, epochs, validate, stopper):
    stop = False
    for epoch in range(epochs):
        for batch in loader:
            loss = model(batch)
            loss.backward()
            optimizer.step()
        if RANK in {-1, 0}:
            stop = stopper(epoch, validate(model))
        if RANK != -1:
            box = [stop if RANK == 0 else None]
            dist.broadcast_object_list(box, 0)
            if RANK != 0:
                stop = box[0]
        if stop:
            break
    dist.barrier()
