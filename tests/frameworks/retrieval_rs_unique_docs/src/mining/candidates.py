"""Candidate documents of a batch: every distinct clicked document, padded for sharding."""

import torch


def round_up(n: int, multiple: int) -> int:
    return (n + multiple - 1) // multiple * multiple


class CandidatePool:
    def __init__(self, num_shards: int):
        self.num_shards = num_shards

    def collect(self, doc_ids: torch.Tensor):
        """Distinct documents of the batch and the padded table height."""
        distinct = torch.unique(doc_ids)
        rows = round_up(distinct.numel(), self.num_shards)
        return distinct, rows
