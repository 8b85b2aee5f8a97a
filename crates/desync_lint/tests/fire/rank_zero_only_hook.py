# expect: DSY001 at line 20
# expect: DSY001 at line 26
"""Lightning hooks made rank-0-only by a decorator: the collectives in their bodies (a
property that broadcasts, a strategy barrier) are issued by rank 0 alone; a decorated hook
that only prints is what the decorator is for."""
import json
import os

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_only


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)

    # `log_dir` broadcasts from rank 0: the others never join it.
    @rank_zero_only
    def on_fit_start(self):
        out = os.path.join(self.trainer.log_dir, "config.json")
        with open(out, "w") as f:
            json.dump({"layers": 1}, f)

    @rank_zero_only
    def on_train_end(self):
        self.trainer.strategy.barrier()
        print("done")

    @rank_zero_only
    def on_validation_end(self):
        print(json.dumps({"epoch": self.current_epoch}))
