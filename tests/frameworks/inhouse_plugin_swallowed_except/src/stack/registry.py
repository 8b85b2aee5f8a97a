"""Plugin registry: plugins register hooks by name with a decorator; the config enables them."""

from collections import defaultdict

_HOOKS: dict[str, dict[str, object]] = defaultdict(dict)


def hook(event: str, name: str | None = None):
    def register(fn):
        _HOOKS[event][name or fn.__name__] = fn
        return fn
    return register


def enabled(event: str, names: list[str]) -> list:
    return [fn for name, fn in _HOOKS[event].items() if name in names]
