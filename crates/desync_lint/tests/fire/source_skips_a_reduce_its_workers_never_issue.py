# expect: DSY003 at line 55
"""Distributed scoring with a command loop: the workers serve scatter commands and answer
each with a gather, so rank 0 may skip sending one. But every rank also sums its counts with
an all-reduce in `sync_counts()`, which the loop never issues; a rank whose counts hold a value
that cannot be summed returns before the all-reduce, and the others wait in it. Only the
commands the loop serves pair with it (quiet/source_skips_a_command_its_workers_serve.py)."""
import pickle
import traceback

import torch
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

    def sync_counts(self, counts):
        try:
            total = torch.tensor([sum(counts.values())], dtype=torch.float64)
        except TypeError:
            return None
        dist.all_reduce(total)
        return float(total.item())
