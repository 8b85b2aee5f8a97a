"""YAML config -> attribute access (cfg.model.lr)."""

from pathlib import Path
from types import SimpleNamespace

import yaml


def _ns(value):
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_ns(v) for v in value]
    return value


def load(path: str | Path) -> SimpleNamespace:
    with open(path) as f:
        return _ns(yaml.safe_load(f))
