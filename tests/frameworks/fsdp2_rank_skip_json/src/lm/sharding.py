"""FSDP2: shard every block, then the root module."""

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def shard_model(model, world_size: int):
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("fsdp",))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model
