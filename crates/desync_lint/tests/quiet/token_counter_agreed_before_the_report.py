"""A throughput meter counts the tokens each embedding call sees, in a forward pre-hook; the
count is this rank's own. Before skipping the report the ranks agree whether any of them saw
tokens (an all-reduce of the flag with MAX), so they all skip it or all sum their counts.
(Skipping on the rank's own count fires: fire/token_counter_hook_skips_the_report.py.)"""
import time

import torch
import torch.distributed as dist


class ThroughputMeter:
    def __init__(self, model, report_every=100):
        self.report_every = report_every
        self.tokens_seen = 0
        self.started = time.monotonic()
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Embedding):
                module.register_forward_pre_hook(self._count_tokens)

    def _count_tokens(self, module, args):
        input_ids = args[0]
        self.tokens_seen += int(input_ids.numel())

    def on_step_end(self, step):
        if step % self.report_every:
            return None
        return self.report()

    def report(self):
        any_tokens = torch.tensor([1 if self.tokens_seen else 0])
        dist.all_reduce(any_tokens, op=dist.ReduceOp.MAX)
        if any_tokens.item() == 0:
            return None
        total = torch.tensor([self.tokens_seen], dtype=torch.float64)
        dist.all_reduce(total)
        elapsed = time.monotonic() - self.started
        self.tokens_seen = 0
        self.started = time.monotonic()
        return float(total.item()) / elapsed
