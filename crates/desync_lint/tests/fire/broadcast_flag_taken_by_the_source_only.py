# expect: DSY001 at line 28
"""The same early stop, with the test around the receive written the wrong way round: the
source (rank 0) takes the flag it sent, and the receivers keep the flag they held before,
which only rank 0 computed. The receivers never stop; rank 0 breaks out and leaves them in the
next epoch's all-reduce."""
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
            if RANK == 0:
                stop = box[0]
        if stop:
            break
        dist.barrier()
