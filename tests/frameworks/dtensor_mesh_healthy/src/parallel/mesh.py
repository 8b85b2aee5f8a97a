"""Tensor parallel inside a host pair, FSDP2 across the data-parallel dimension."""

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


def build_mesh(cfg):
    return init_device_mesh("cpu", (cfg.dp, cfg.tp), mesh_dim_names=("dp", "tp"))


def parallelize(model, mesh):
    for block in (model.ff1, model.ff2):
        parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return model
