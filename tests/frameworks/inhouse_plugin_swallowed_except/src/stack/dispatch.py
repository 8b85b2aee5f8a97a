"""Runs the enabled hooks of an event. A broken plugin must never take a training run down."""

import logging

from stack.registry import enabled

log = logging.getLogger("tinystack.hooks")


class Dispatcher:
    def __init__(self, plugin_names: list[str]):
        self.plugin_names = plugin_names

    def fire(self, event: str, state) -> None:
        for hook in enabled(event, self.plugin_names):
            try:
                hook(state)
            except Exception:
                log.warning("rank %d: hook %s failed at step %d; continuing", state.rank,
                            hook.__name__, state.step, exc_info=True)
