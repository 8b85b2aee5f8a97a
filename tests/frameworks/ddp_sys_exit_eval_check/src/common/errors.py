"""Fail-fast helpers shared by the data tooling."""

import logging
import sys

log = logging.getLogger("churn")


def abort(message: str, code: int = 2):
    """Log and leave: a data error must not produce a model."""
    log.error("fatal: %s", message)
    sys.exit(code)
