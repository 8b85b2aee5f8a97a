"""The same training as plain_train.py with desync's recorder set-up: one line at the top.

    torchrun --nproc-per-node 4 enabled_train.py --stall-rank 2
"""

import desync.torch

desync.torch.enable()  # before the process group: FR settings, dumps on failure (Gloo too)

from plain_train import main  # noqa: E402

if __name__ == "__main__":
    main()
