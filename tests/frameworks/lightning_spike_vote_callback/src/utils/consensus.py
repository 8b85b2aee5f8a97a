"""Small helpers for decisions every rank must take together."""


def any_rank(trainer, flag: bool) -> bool:
    """True on every rank when ``flag`` is True on at least one of them."""
    return trainer.strategy.reduce_boolean_decision(flag, all=False)


def all_ranks(trainer, flag: bool) -> bool:
    """True on every rank only when ``flag`` is True on all of them."""
    return trainer.strategy.reduce_boolean_decision(flag, all=True)
