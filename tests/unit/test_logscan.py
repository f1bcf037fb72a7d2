"""The suite's log scan (tests/logscan.py) finds what it looks for and only that."""
from __future__ import annotations

import orjson

from tests import logscan


def test_an_address_in_a_log_line_is_found_even_in_a_url():
    lines = [orjson.dumps({"event": "otp_sent", "to": "ada@example.com"}).decode(),
             orjson.dumps({"event": "request", "path": "/api/search?q=bob%40example.org"}).decode(),
             orjson.dumps({"event": "request", "path": "/api/postsales/v1/me"}).decode()]
    assert logscan.leaks("\n".join(lines)) == [lines[0], lines[1].replace("%40", "@")]


def test_a_connection_string_is_not_an_address():
    line = orjson.dumps({"event": "db", "url": "postgresql://insurance_app@127.0.0.1:5432/insurance"}).decode()
    assert logscan.leaks(line) == []


def test_a_run_whose_stack_logged_an_address_is_reported_with_its_file(tmp_path, monkeypatch):
    monkeypatch.delenv("TEST_VERBOSE", raising=False)
    monkeypatch.setattr(logscan, "_folder", tmp_path)
    with logscan.sink("worker") as out:
        out.write(b'{"event": "delivered"}\n{"event": "mail", "to": "ada@example.com"}\n')
    found = logscan.finish()
    assert len(found) == 1 and found[0].endswith('"to": "ada@example.com"}') and "worker" in found[0]
    assert tmp_path.exists(), "the logs that named someone are kept for the reader"
