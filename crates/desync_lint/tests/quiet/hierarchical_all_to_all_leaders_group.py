"""Hierarchical all-to-all for expert parallelism across nodes: each node's leader gathers
its node's tokens, exchanges them with the other leaders on the inter-node group (only the
leaders are its members), and scatters the result back; the other ranks of the node only
take part in the gather and the scatter, on the intra-node group, in the same order."""
import torch
import torch.distributed as dist


def hierarchical_all_to_all(inputs, intra_node_group, inter_node_group, leader):
    local_world = dist.get_world_size(intra_node_group)
    outputs = torch.empty_like(inputs)
    if dist.get_rank() == leader:
        gathered = [torch.empty_like(inputs) for _ in range(local_world)]
        dist.gather(inputs, gathered, dst=leader, group=intra_node_group)
        stacked = torch.cat(gathered)
        exchanged = torch.empty_like(stacked)
        dist.all_to_all_single(exchanged, stacked, group=inter_node_group)
        pieces = list(exchanged.chunk(local_world))
        dist.scatter(outputs, pieces, src=leader, group=intra_node_group)
    else:
        dist.gather(inputs, dst=leader, group=intra_node_group)
        dist.scatter(outputs, src=leader, group=intra_node_group)
    return outputs
