"""A tiny event bus: components subscribe to named events; the trainer emits them."""

from collections import defaultdict


class EventBus:
    def __init__(self):
        self._handlers = defaultdict(list)

    def subscribe(self, event: str, handler):
        self._handlers[event].append(handler)

    def emit(self, event: str, **payload):
        for handler in self._handlers[event]:
            handler(**payload)
