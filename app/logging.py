"""Structured logs: one JSON object per line on stdout, through structlog.

An exception is logged as its type, message and stack (file, line, function), never with the
frames' locals: those hold request bodies, claims documents, tokens and SQL arguments. Messages
are scrubbed of what still could carry them (a JWT, the value asyncpg quotes when it refuses a
query argument) and cut to a bounded length.
"""
from __future__ import annotations

import logging
import re
import sys
from typing import Any

import structlog
import structlog.tracebacks

MAX_MESSAGE = 500
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
# asyncpg: "invalid input for query argument $3: '{\"sub\": ...' (...)": the value is request data.
_QUERY_ARGUMENT = re.compile(r"(query argument \$\d+)(?: in element #\d+ of executemany\(\) sequence)?: .*",
                             re.DOTALL)


def scrub(text: str) -> str:
    text = _QUERY_ARGUMENT.sub(r"\1: <redacted>", _JWT.sub("<jwt>", text))
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "..."


def _scrub_exceptions(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    for exc in event.get("exception") or ():
        if isinstance(exc, dict) and isinstance(exc.get("exc_value"), str):
            exc["exc_value"] = scrub(exc["exc_value"])
    return event


def exception_processors() -> list:
    """Exceptions as dicts (type, message, frames) without locals, scrubbed."""
    transformer = structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    return [structlog.processors.ExceptionRenderer(transformer), _scrub_exceptions]


def configure(level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    logging.basicConfig(stream=sys.stdout, level=numeric, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *exception_processors(),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=True,
    )
