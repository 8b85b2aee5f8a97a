"""Rank 0 builds a list of buffer names from its own module and broadcasts it; every other rank
receives it into a list it rebuilt; every rank then walks the received list and broadcasts each
buffer: the loop runs over an agreed list, as often on every rank."""
import torch.distributed as dist


def sync_buffers(module, device):
    rank = dist.get_rank()
    if rank == 0:
        spec = [(name, tuple(buf.shape)) for name, buf in module.named_buffers()]
    else:
        spec = None
    box = [spec] if rank == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    spec = box[0]
    buffers = dict(module.named_buffers())
    for name, shape in spec:
        dist.broadcast(buffers[name], src=0)
