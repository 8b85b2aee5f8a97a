"""Two-stage run: self-supervised pretraining of the encoder, then fault classification."""

import argparse
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Config:
    channels: int = 6
    window: int = 32
    hidden: int = 64
    code: int = 16
    faults: int = 4
    windows_per_rank: int = 192
    batch: int = 32
    pretrain_epochs: int = 1
    finetune_epochs: int = 2
    lr: float = 1e-3
    run_name: str = "pump-ssl"
    dist_timeout_s: float = 30.0
    seed: int = 3

    @property
    def work_dir(self) -> Path:
        # fast node-local NVMe for intermediate artifacts (set by the cluster's job prolog)
        return Path(os.environ.get("LOCAL_SCRATCH", tempfile.gettempdir())) / self.run_name

    @property
    def encoder_path(self) -> Path:
        return self.work_dir / "pretrained_encoder.pt"


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Pretrain and fine-tune the pump-fault model.")
    for name, value in vars(Config()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
