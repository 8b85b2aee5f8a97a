# expect: DSY001 at line 27
"""Only rank 0 creates the tracking store; the others keep `None` and return before the
broadcast of the run id that rank 0 then waits in. (When every rank creates one in turn, the
test is the same everywhere: quiet/ranks_take_turns_at_the_same_call.py.)"""
import torch.distributed as dist


class TrackingStore:
    def __init__(self, path):
        self.path = path


def open_store(path):
    store = None
    if dist.get_rank() == 0:
        store = TrackingStore(path)
    paths = [path]
    dist.broadcast_object_list(paths, src=0)
    if dist.get_rank() != 0:
        store = None
    return store


def sync_run_id(path, run_id):
    store = open_store(path)
    if store is None:
        return None
    ids = [run_id]
    dist.broadcast_object_list(ids, src=0)
    return ids[0]
