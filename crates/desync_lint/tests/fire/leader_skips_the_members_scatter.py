# expect: DSY001 at line 12
"""A hierarchical exchange whose leader forgot the scatter back to its node: the members
wait in the intra-node scatter the leader never issues. (The leaders' extra inter-node
collective alone is fine: quiet/hierarchical_all_to_all_leaders_group.py.)"""
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
        outputs.copy_(exchanged[: outputs.shape[0]])
    else:
        dist.gather(inputs, dst=leader, group=intra_node_group)
        dist.scatter(outputs, src=leader, group=intra_node_group)
    return outputs
