# expect: DSY003 at line 56
# expect: DSY003 at line 60
# expect: DSY003 at line 79
# expect: DSY003 at line 89
# expect: DSY003 at line 99
"""The pool checks the node's driver first and raises the project's error on the ranks
whose node lacks it, before the all_reduce the other ranks go on to issue; the handler
swallows it there. (The check after the collective:
quiet/project_error_raised_after_the_helpers_collective.py.) A subclass raised through a
callback a library calls counts too: `load` hands `on_timeout` to `signal.signal`. And a
check between two collectives skips the second one only; so does a check before a property
read that broadcasts (a Lightning trainer's `log_dir`)."""
import os
import signal

import lightning.pytorch as pl

import torch
import torch.distributed as dist


class PoolUnsupported(Exception):
    pass


class PoolTimeout(PoolUnsupported):
    pass


def load(path):
    def on_timeout(signum, frame):
        raise PoolTimeout(path)

    signal.signal(signal.SIGALRM, on_timeout)
    signal.alarm(30)
    return torch.load(path)


def managed_pool(path):
    if not os.path.exists("/dev/nvidia-uvm"):
        raise PoolUnsupported("no managed memory on this node")
    flag = torch.ones(1)
    dist.all_reduce(flag)
    return flag


def restore(path):
    state = load(path)
    dist.broadcast(state, 0)
    return state


def setup(path):
    try:
        pool = managed_pool(path)
    except PoolUnsupported:
        pool = None
    try:
        state = restore(path)
    except PoolTimeout:
        state = None
    return pool, state


class BadShard(Exception):
    pass


def check_shard(shard):
    if shard.numel() == 0:
        raise BadShard("empty shard")


def exchange(shard):
    try:
        dist.all_reduce(shard)
        check_shard(shard)
        dist.broadcast(shard, 0)
    except BadShard:
        pass
    return shard


def exchange_through(plugin, shard):
    # What `plugin.prepare` runs is out of view: it may raise BadShard.
    try:
        plugin.prepare(shard)
        dist.all_reduce(shard)
    except BadShard:
        return None
    return shard


class ExportCallback(pl.Callback):
    def on_train_end(self, trainer, pl_module):
        try:
            check_shard(pl_module.shard)
            folder = trainer.log_dir
        except BadShard:
            return
        pl_module.export(folder)
