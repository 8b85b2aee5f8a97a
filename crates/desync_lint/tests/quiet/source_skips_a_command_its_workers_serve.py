"""Distributed scoring with a command loop. The workers sit in `serve()`, receiving commands
from rank 0 by scatter and answering each with a gather; rank 0 alone calls `score()`, which
sends the shards. When the shards cannot be pickled, rank 0 scores them itself and sends no
command: the workers wait for the next one (or for the stop) as they do between calls, so
skipping the scatter and the gather leaves no rank behind. (A skipped collective that the
loop does not serve fires: fire/source_skips_a_reduce_its_workers_never_issue.py.)"""
import pickle
import traceback

import torch.distributed as dist


class DistributedScorer:
    def __init__(self, model):
        self.model = model
        self.world_size = dist.get_world_size()

    def _scatter(self, messages=None):
        box = [None]
        dist.scatter_object_list(box, messages, src=0)
        return box[0]

    def _score_and_gather(self, shard):
        try:
            result = (self.model.score(shard), None)
        except Exception:
            result = (None, traceback.format_exc())
        results = [None] * self.world_size if dist.get_rank() == 0 else None
        dist.gather_object(result, results, dst=0)
        return results

    def serve(self):
        while True:
            command, payload = self._scatter()
            if command == "stop":
                return
            self._score_and_gather(payload)

    def stop(self):
        self._scatter([("stop", None)] * self.world_size)

    def score(self, items):
        size = -(-len(items) // self.world_size)
        commands = [("score", items[r * size:(r + 1) * size]) for r in range(self.world_size)]
        try:
            pickle.dumps(commands)
        except Exception:
            return self.model.score(items)
        _, shard = self._scatter(commands)
        results = self._score_and_gather(shard)
        return [score for part, _ in results if part is not None for score in part]
