# expect: DSY004 at line 11
# expect: DSY002 at line 19
"""The same loop, but the list walked is the rank's own one: rank 0's spec is broadcast and
the received copy dropped, so each rank loops over its own module's buffers (rank-local
when ranks hold different shards)."""
import torch.distributed as dist


def sync_buffers(module, device):
    rank = dist.get_rank()
    if rank == 0:
        spec = [(name, tuple(buf.shape)) for name, buf in module.named_buffers()]
    else:
        spec = [(name, tuple(buf.shape)) for name, buf in module.named_buffers() if name.endswith(str(rank))]
    box = [spec] if rank == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    received = box[0]
    print(len(received))
    for name, shape in spec:
        dist.broadcast(dict(module.named_buffers())[name], src=0)
