# expect: DSY003 at line 28
"""A background checkpoint writer whose failed save is only logged: the worker that failed
before the barrier goes back to waiting for requests, while the other workers wait in the
barrier for it. (Sending the exception itself to the parent, which raises it, passes it on:
quiet/worker_hands_its_error_to_the_parent.py.)"""
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def write_shards(state, path):
    for name, tensor in state.items():
        tensor.save(f"{path}/{name}.pt")
    dist.barrier()


def serve(parent_conn):
    dist.init_process_group("gloo")
    while True:
        request = parent_conn.recv()
        if request is None:
            break
        try:
            write_shards(request.state, request.path)
            parent_conn.send("done")
        except BaseException as err:
            logger.error(f"save failed: {err}")
            parent_conn.send(str(err))
    dist.destroy_process_group()
