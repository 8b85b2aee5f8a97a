"""An inference context asks for a managed-memory pool and falls back to device memory when
the project says the pool is unsupported. Building the pool first all-reduces whether the
allocator built on every rank (a build timeout, the project's subclass of that error, is
caught inside the build), then raises the project's error on every rank alike. A failing
collective never raises a class of the project, so the handler runs only after that
all_reduce: no rank skips it. So does a callback that reads the trainer's log folder (a
broadcast) before checking its own settings. (Raising before the collective:
fire/project_error_raised_before_the_helpers_collective.py.)"""
import signal
from contextlib import contextmanager

import lightning.pytorch as pl
import torch
import torch.distributed as dist


class AllocatorUnsupported(Exception):
    pass


class AllocatorTimeout(AllocatorUnsupported):
    pass


_allocator = None


@contextmanager
def deadline(seconds):
    def on_alarm(signum, frame):
        raise AllocatorTimeout("building the allocator timed out")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.alarm(seconds)
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def build_allocator():
    global _allocator
    try:
        with deadline(30):
            _allocator = torch.cuda.memory.CUDAPluggableAllocator("alloc.so", "alloc", "free")
    except (RuntimeError, OSError, AllocatorTimeout):
        _allocator = None
    built = torch.tensor([0 if _allocator is None else 1], device=torch.cuda.current_device())
    dist.all_reduce(built, op=dist.ReduceOp.MIN)
    if built.item() == 0:
        _allocator = None


def managed_pool():
    build_allocator()
    if _allocator is None:
        raise AllocatorUnsupported("managed memory is unsupported here")
    return torch.cuda.MemPool(_allocator.allocator())


class InferenceContext:
    def __init__(self, managed_memory):
        self.managed_memory = managed_memory
        self.pool = None
        if managed_memory:
            try:
                self.pool = managed_pool()
            except AllocatorUnsupported:
                self.managed_memory = False


class SettingsError(Exception):
    pass


def check_settings(settings):
    if not settings.get("export"):
        raise SettingsError("nothing to export")


class ExportCallback(pl.Callback):
    def on_train_end(self, trainer, pl_module):
        try:
            folder = trainer.log_dir
            check_settings(pl_module.settings)
        except SettingsError:
            return
        pl_module.export(folder)
