# expect: DSY003 at line 29
"""Only an `except` around imports (or questions about the node type) runs on every rank or
on none. This one also reads the rank's own manifest: a rank whose file is missing or torn
returns before the gather its peers wait in.
(The import alone is quiet: quiet/optional_package_probed_by_import.py.)"""
import json
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


def manifest_path(out_dir):
    return f"{out_dir}/manifest-{dist.get_rank()}.json"


class ExportOnEnd:
    def __init__(self, out_dir):
        self.out_dir = out_dir

    def on_train_end(self, model):
        try:
            from safetensors.torch import save_file
            with open(manifest_path(self.out_dir)) as fh:
                manifest = json.load(fh)
        except Exception:
            logger.error("cannot export")
            return
        shards = [None] * dist.get_world_size()
        dist.all_gather_object(shards, model.state_dict())
        if dist.get_rank() == 0:
            save_file(manifest, f"{self.out_dir}/model.safetensors")
