"""Loading a model under a requested default dtype: the loader changes the default only when a
dtype was requested (which can depend on the checkpoint each rank found), and sets it back to
what `torch.get_default_dtype()` read before the change once the weights are in. The ranks
that changed it restore their own earlier default; every rank ends where it started."""
import os

import torch


class Loader:
    @classmethod
    def _set_default_dtype(cls, dtype):
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        return previous

    @classmethod
    def load(cls, path, dtype=None):
        if dtype is None and os.path.exists(os.path.join(path, "bf16.marker")):
            dtype = torch.bfloat16
        saved = None
        if dtype is not None:
            saved = cls._set_default_dtype(dtype)
        model = torch.load(os.path.join(path, "model.pt"), weights_only=False)
        if saved is not None:
            torch.set_default_dtype(saved)
        return model
