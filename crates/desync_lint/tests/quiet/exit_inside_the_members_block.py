"""Tied input and output embeddings live on the first and last pipeline stages, whose ranks
form `embedding_group`; after the backward pass those ranks sum the two gradients. Only
members enter the block, and a member whose tied weight has no gradient (the embedding is
frozen, a setting every member shares) returns before the all_reduce. The weight is looked
up inside the block, so every rank that reaches the `if grad is None` test passed the same
membership test first: that test decides nothing between them. (A value set inside a rank
block and tested after it still counts: desync_python's flow test
`tests_that_hold_both_the_binding_and_the_use_decide_nothing_between_them`.)"""
import torch.distributed as dist


def tied_weight(chunk):
    if chunk.pre_process:
        return chunk.embedding.weight
    return chunk.output_layer.weight


def allreduce_tied_embedding_grads(chunks, embedding_group, freeze_embeddings):
    if dist.get_rank() in dist.get_process_group_ranks(embedding_group):
        chunk = chunks[0]
        weight = tied_weight(chunk)
        grad = None if freeze_embeddings else weight.main_grad
        if grad is None:
            return
        dist.all_reduce(grad, group=embedding_group)
