"""File tests that every rank can make alike, or that only the reading rank makes."""
import os

import torch
import torch.distributed as dist


def restore_on_the_reading_rank(path):
    # Only rank 0 looks at the file system; the broadcast carries its answer.
    box = [None]
    if dist.get_rank() == 0 and os.path.exists(path):
        box[0] = torch.load(path)
    dist.broadcast_object_list(box, src=0)
    return box[0]


def every_rank_reads_its_own_copy(path, model):
    # Every rank that sees the file loads it itself: the job already needs each rank to see it.
    if os.path.exists(path):
        model.load_state_dict(torch.load(path))
        dist.barrier()


def both_ways_broadcast(path):
    if os.path.exists(path):
        box = [None]
        if dist.get_rank() == 0:
            box[0] = torch.load(path)
        dist.broadcast_object_list(box, src=0)
    else:
        box = [None]
        dist.broadcast_object_list(box, src=0)
    return box[0]


def another_file_is_read(path, other):
    # The file rank 0 reads is not the one every rank tested.
    if os.path.exists(path):
        box = [None]
        if dist.get_rank() == 0:
            box[0] = torch.load(other)
        dist.broadcast_object_list(box, src=0)
        return box[0]
    return None


def leave_when_missing_then_every_rank_reads(path):
    # An exit on the file's absence, but every rank that stays reads the file itself.
    if not os.path.exists(path):
        return None
    state = torch.load(path)
    dist.barrier()
    return state


def leave_after_joining(path):
    # The leaving clause issues the collective itself before it goes.
    if not os.path.exists(path):
        dist.broadcast_object_list([None], src=0)
        return None
    box = [None]
    if dist.get_rank() == 0:
        box[0] = torch.load(path)
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _announce(p):
    print(f"resuming from {p}")


def a_helper_that_only_names_the_file(path):
    # Rank 0 passes the path to a helper that never opens it.
    if os.path.exists(path):
        if dist.get_rank() == 0:
            _announce(path)
        dist.barrier()


def an_inner_loop_skips_its_own_items(path, shards):
    # The `continue` belongs to the loop inside the clause, not to the loop around the `if`.
    for shard in shards:
        if not os.path.exists(path):
            for piece in shard:
                if piece is None:
                    continue
                print(piece)
        box = [None]
        if dist.get_rank() == 0:
            box[0] = torch.load(path)
        dist.broadcast_object_list(box, src=0)
