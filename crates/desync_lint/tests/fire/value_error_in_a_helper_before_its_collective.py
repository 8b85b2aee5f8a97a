# expect: DSY003 at line 32
"""The helper builds the tensor it broadcasts from the request it is given: `int(...)` of a
malformed count raises a ValueError on the rank that received it, before the broadcast its
peers issue, and the handler swallows it. (A helper that only builds a constant command tensor
first: quiet/value_error_after_a_helper_that_broadcasts_first.py.)"""
import torch
import torch.distributed as dist


def send_count(request):
    """Broadcasts how many tokens to generate."""
    count = torch.tensor([int(request["tokens"])], dtype=torch.long)
    dist.broadcast(count, 0)
    return count


def run(engine, count):
    if int(count.item()) <= 0:
        raise ValueError("nothing to generate")
    return engine.generate(int(count.item()))


class GenerateResource:
    def __init__(self, engine):
        self.engine = engine

    def put(self, request):
        try:
            count = send_count(request)
            text = run(self.engine, count)
            return {"text": text}
        except ValueError as err:
            return {"error": err.args[0]}
