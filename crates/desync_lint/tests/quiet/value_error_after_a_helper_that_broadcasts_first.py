"""A text-generation server: the request handler first tells the other ranks to generate
(a helper that only builds the one-element command tensor, then broadcasts it), then parses
the request, whose ValueError (a malformed prompt list) is answered as an error. The helper
issues its broadcast before anything in the `try` can raise a ValueError, so the handler
cannot have skipped it on the ranks that raised; what follows the broadcast issues nothing.
(Helpers that parse before their collective: fire/value_error_in_a_helper_before_its_collective.py.)"""
import torch
import torch.distributed as dist

GENERATE_NUM = 0


def send_do_generate():
    """Broadcasts the command to generate to the other ranks."""
    choice = torch.tensor([GENERATE_NUM], dtype=torch.long, device=torch.cuda.current_device())
    torch.distributed.broadcast(choice, 0)


def parse_prompts(request):
    prompts = request.get("prompts")
    if not isinstance(prompts, list):
        raise ValueError("prompts is not a list")
    return prompts


class GenerateResource:
    def __init__(self, engine):
        self.engine = engine

    def put(self, request):
        try:
            send_do_generate()
            prompts = parse_prompts(request)
            return {"text": self.engine.generate(prompts)}
        except ValueError as err:
            return {"error": err.args[0]}
