"""2-D mesh: replicas (one per plant) x shards; HSDP = FSDP2 on the 2-D mesh."""

from dataclasses import dataclass

import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


@dataclass
class Topology:
    mesh: object
    replica: int
    shard: int
    num_shards: int

    @property
    def shard_group(self):
        return self.mesh.get_group("shard")


def build_topology(replicate: int) -> Topology:
    world = dist.get_world_size()
    mesh = init_device_mesh("cpu", (replicate, world // replicate),
                            mesh_dim_names=("replicate", "shard"))
    return Topology(mesh, mesh.get_local_rank("replicate"), mesh.get_local_rank("shard"),
                    world // replicate)


def apply_hsdp(model, topo: Topology):
    for block in model.blocks:
        fully_shard(block, mesh=topo.mesh)
    fully_shard(model, mesh=topo.mesh)
    return model
