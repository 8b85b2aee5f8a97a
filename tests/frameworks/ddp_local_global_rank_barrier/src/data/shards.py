"""This rank's contiguous part of the cached windows."""

from torch.utils.data import DataLoader, TensorDataset


def loader(cache: dict, env, batch_size: int) -> DataLoader:
    per_rank = cache["x"].shape[0] // env.world
    lo = env.rank * per_rank
    part = TensorDataset(cache["x"][lo:lo + per_rank], cache["y"][lo:lo + per_rank])
    return DataLoader(part, batch_size=batch_size, shuffle=True, drop_last=True)
