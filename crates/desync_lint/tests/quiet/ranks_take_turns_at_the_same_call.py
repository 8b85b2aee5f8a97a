"""Rank 0 creates the tracking store first (it resolves the run's placeholders), broadcasts
the resolved path, and the other ranks create theirs from it: every rank ends up holding a
store, so the `store is None` test below is the same everywhere and every rank joins the
broadcast of the run id. (A store made on rank 0 only fires:
fire/store_made_on_rank_zero_only.py.)"""
import torch.distributed as dist


class TrackingStore:
    def __init__(self, path):
        self.path = path

    def resolve(self, path):
        return path.replace("{run}", "run-1")


def open_store(path):
    store = None
    if dist.get_rank() == 0:
        store = TrackingStore(path)
        path = store.resolve(path)
    paths = [path]
    dist.broadcast_object_list(paths, src=0)
    path = paths[0]
    if dist.get_rank() != 0:
        store = TrackingStore(path)
    return store


def read_weights(path):
    with open(path, "rb") as f:
        return f.read() or None


def load_model(path):
    # Rank 0 fills the local cache first; the others read it once rank 0 is done.
    if dist.get_rank() == 0:
        weights = read_weights(path)
        dist.barrier()
    else:
        dist.barrier()
        weights = read_weights(path)
    return weights


def sync_run_id(path, run_id):
    store = open_store(path)
    if store is None:
        return None
    ids = [run_id]
    dist.broadcast_object_list(ids, src=0)
    return ids[0]


def first_step(path):
    model = load_model(path)
    if model is None:
        return None
    dist.barrier()
    return model
