# expect: DSY002 at line 35
"""A throughput meter counts the tokens each embedding call sees, in a forward pre-hook
registered on the model's embedding. Every `report_every` steps the ranks sum their counts;
a rank that saw no tokens since the last report (its micro-batches were all padding that the
collator dropped, or its pipeline stage holds no embedding) returns before the all-reduce,
and the others wait in it. The count is written by the hook, as often as this rank's
embedding ran: it is the rank's own. (Agreeing first that some rank saw tokens is quiet:
quiet/token_counter_agreed_before_the_report.py.)"""
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
        if self.tokens_seen == 0:
            return None
        total = torch.tensor([self.tokens_seen], dtype=torch.float64)
        dist.all_reduce(total)
        elapsed = time.monotonic() - self.started
        self.tokens_seen = 0
        self.started = time.monotonic()
        return float(total.item()) / elapsed
