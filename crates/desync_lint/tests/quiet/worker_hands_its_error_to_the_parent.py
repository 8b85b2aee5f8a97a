"""A background checkpoint writer: each rank's training process starts one worker process,
the workers form their own process group, and each save request ends with a barrier among
the workers. A worker whose save fails sends the exception object itself to its parent,
which raises it on its next wait, so the rank's training process fails loudly and the
launcher stops its peers: the error is passed on, not swallowed. (A worker that only logs
the failure and goes on: fire/worker_logs_its_error_and_serves_on.py.)"""
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
            parent_conn.send(err)
    dist.destroy_process_group()
