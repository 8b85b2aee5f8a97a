"""An inference server's request handler: every rank first joins the broadcast of the
request's settings (the `try`'s first statement), then runs the engine, whose ValueErrors (a
bad sampling parameter, raised alike on every rank from the broadcast settings) are answered
as an error. Nothing in the `try` runs before the broadcast, and a ValueError is not what a
failing collective raises, so the handler cannot have skipped it; the engine issues no
collective. (A helper called first can raise before its own collectives:
fire/value_error_before_the_collective.py.)"""
import torch
import torch.distributed as dist


def run_engine(engine, prompts, settings):
    temperature = float(settings[0])
    if temperature < 0:
        raise ValueError("temperature must be non-negative")
    return engine.generate(prompts, temperature=temperature)


class GenerateHandler:
    def __init__(self, engine):
        self.engine = engine

    def put(self, request, prompts):
        settings = torch.tensor([float(request.get("temperature", 1.0))])
        try:
            dist.broadcast(settings, 0)
            response = run_engine(self.engine, prompts, settings)
            return {"text": response}
        except ValueError as err:
            return {"error": err.args[0]}
