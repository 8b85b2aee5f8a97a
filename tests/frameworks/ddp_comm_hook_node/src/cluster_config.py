"""Per-host settings, read from the environment the cluster image provides.

Hosts on the new interconnect have less bandwidth headroom and ship with
GRAD_COMPRESSION=fp16 in their image; the rest leave it unset.
"""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class HostConfig:
    grad_compression: str
    bucket_cap_mb: float


def host_config() -> HostConfig:
    return HostConfig(
        grad_compression=os.environ.get("GRAD_COMPRESSION", "none"),
        bucket_cap_mb=float(os.environ.get("DDP_BUCKET_CAP_MB", "25")),
    )
