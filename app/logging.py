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
    """JSON lines on stdout for our own events and for every library's `logging` records
    (uvicorn, httpx, asyncpg), with one timestamp format. httpx logs every request at INFO:
    that is the worker's and the orchestrator's own events again, so it speaks from WARNING."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *exception_processors(),
                    structlog.processors.JSONRenderer()]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own handlers, if any: ours instead
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # uvicorn's access line repeats the app's own (the `request` event, app/middleware.py) with the
    # raw query string, which may name a person (/backoffice/search?q=<e-mail>): none at all.
    access = logging.getLogger("uvicorn.access")
    access.handlers[:] = []
    access.propagate = False
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    # aiosmtpd (the sandbox's mail catcher) logs each envelope's addresses at INFO: people.
    logging.getLogger("mail.log").setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[*shared, *exception_processors(), structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=True,
    )
