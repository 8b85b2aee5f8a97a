import time

from stack.registry import hook

_last = {"t": None}


@hook("after_steps", name="throughput")
def report_throughput(state):
    now = time.perf_counter()
    if _last["t"] is not None and state.rank == 0:
        print(f"step {state.step}: {len(state.window) / (now - _last['t']):.0f} rows/s", flush=True)
    _last["t"] = now
