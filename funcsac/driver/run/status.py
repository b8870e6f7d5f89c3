"""Status lines: what a run says as it goes (a compile switched in, a resume's new settings, the
summary), as ``logging`` records of the ``funcsac`` logger at level INFO. Where the program has
not configured that logger (nor the root logger), a run prints them to stdout itself, prefixed
``funcsac:``, for its own length (``showing_status``); an application that configures logging
receives them through its own handlers instead."""
from __future__ import annotations

import contextlib
import logging
import sys

LOGGER = logging.getLogger("funcsac")
FORMAT = "funcsac: %(message)s"


@contextlib.contextmanager
def showing_status(quiet: bool = False):
    """Status lines printed to stdout for the length of the block, unless logging is
    configured for them already; ``quiet`` (a data-parallel run's ranks but the first): only
    warnings. The logger is left as it was."""
    if LOGGER.hasHandlers():
        yield
        return
    handler, level = logging.StreamHandler(sys.stdout), LOGGER.level
    handler.setFormatter(logging.Formatter(FORMAT))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.WARNING if quiet else logging.INFO)
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
