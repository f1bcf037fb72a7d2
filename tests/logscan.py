"""Every log line the suite's stacks write is scanned for e-mail addresses (issue 39).

The API servers, workers and sandboxes that tests start (`python -m app ...` through
tests/conftest.py `running` and `app_process`) write their logs (JSON lines on stdout) into
one folder of this pytest run; at the end of the run `pytest_sessionfinish` reads them all and
fails the run when a line names an e-mail address, printing the lines. An address in a URL is
still one (%40). TEST_VERBOSE=1 sends the logs to the terminal instead, unscanned.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import IO
from urllib.parse import unquote

# An address: a local part, @, a domain whose last label has letters (not a DSN's user@127.0.0.1).
EMAIL = re.compile(r"[\w.+-]+@(?:[\w-]+\.)+[A-Za-z]{2,}\b")

_folder: Path | None = None
_count = 0


def folder() -> Path:
    """This run's log folder, made on first use (under the temporary folder)."""
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="insurance-test-logs-"))
    return _folder


def sink(name: str) -> IO[bytes] | None:
    """A new log file of this run for a process called `name`, to pass as its stdout; None
    (the terminal) under TEST_VERBOSE."""
    global _count
    if os.environ.get("TEST_VERBOSE"):
        return None
    _count += 1
    return open(folder() / f"{_count:04d}-{re.sub(r'[^a-z0-9-]', '-', name.lower())}.log", "wb")


def leaks(text: str) -> list[str]:
    """The lines of `text` that name an e-mail address (URL-decoded first)."""
    return [line for line in unquote(text).splitlines() if EMAIL.search(line)]


def scan() -> list[str]:
    """The lines of this run's logs that name an address, each prefixed by its file."""
    if _folder is None:
        return []
    return [f"{path.name}: {line[:400]}" for path in sorted(_folder.glob("*.log"))
            for line in leaks(path.read_text(errors="replace"))]


def finish() -> list[str]:
    """Scan this run's logs; remove them when they are clean, keep them (and say where) when not."""
    found = scan()
    if _folder is not None and not found:
        shutil.rmtree(_folder, ignore_errors=True)
    return found
