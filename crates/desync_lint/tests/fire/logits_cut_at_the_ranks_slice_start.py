# expect: DSY005 at line 24
"""The slice's first index is a number that differs by tensor-parallel rank: adding it to ids
keeps their shape (quiet/vocab_ids_offset_by_the_ranks_slice.py), but cutting the logits at
it does not. Rank 0 keeps no columns, rank 1 keeps one slice's worth, and the gather of
unequal tensors fails or hangs."""
import torch
import torch.distributed as dist
from megatron.core.parallel_state import (
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_world_size,
)
from megatron.core.tensor_parallel.utils import VocabUtility


def gather_logits_before_slice(full_logits, partition_vocab_size):
    rank = get_tensor_model_parallel_rank()
    world_size = get_tensor_model_parallel_world_size()
    vocab_start_index, _ = VocabUtility.vocab_range_from_per_partition_vocab_size(
        partition_vocab_size, rank, world_size
    )
    before = full_logits[..., :vocab_start_index].contiguous()
    gathered = [torch.empty_like(before) for _ in range(world_size)]
    dist.all_gather(
        gathered,
        before,
        group=get_tensor_model_parallel_group(),
    )
    return gathered
