"""Logs keep no secrets (app/logging.py): an unhandled error is logged with its type, message and
stack, never with the frames' locals (the token, its claims, the request body)."""
from __future__ import annotations

import re
import subprocess
import sys

import httpx
import orjson

from app.logging import scrub
from tests.conftest import ROOT, child_environ, free_port, wait_http
from tests.credentials import holder_bearer


def test_an_unhandled_error_logs_its_stack_without_locals_or_secrets(tmp_path, services, admin):
    # The holder's PATCH fails deep inside the call with an error the app does not expect
    # (42501: its function's grant is taken away for the test), with the token, the claims and
    # the body in the frames' locals. (A database that does not answer is a 503 since issue 28.)
    function = "postsales.update_risk_item(bigint, uuid, jsonb)"
    port = free_port()
    env = child_environ(PORT=str(port))
    log = tmp_path / "api.log"
    admin.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM insurance_app, insurance_holder")
    try:
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port)], env=env, cwd=ROOT,
                                    stdout=out, stderr=subprocess.STDOUT)
            try:
                wait_http(f"http://127.0.0.1:{port}/healthz", process=proc)
                auth = holder_bearer(services, "holder-secret@example.com")
                resp = httpx.patch(f"http://127.0.0.1:{port}/api/postsales/v1/risk-items/7", headers=auth,
                                   json={"insured_subject": {"phone": "body-secret-4711"}})
                assert resp.status_code == 500 and resp.json()["error"]["code"] == "INTERNAL_ERROR"
            finally:
                proc.terminate()
                proc.wait(10)
    finally:
        admin.execute(f"GRANT EXECUTE ON FUNCTION {function} TO insurance_app, insurance_holder")
    text = log.read_text()
    [line] = [orjson.loads(l) for l in text.splitlines() if '"unhandled_error"' in l]
    [exc] = line["exception"][-1:]
    assert exc["exc_type"] and exc["frames"], "type and stack are logged"
    assert all("locals" not in frame for e in line["exception"] for frame in e["frames"])
    token = auth["Authorization"].split()[1]
    for secret in ("body-secret-4711", "holder-secret@example.com", token[:20], token.split(".")[2][:12],
                   "insurance-backend-postsales"):
        assert secret not in text, f"{secret!r} reached the log"


def test_messages_are_scrubbed_of_tokens_and_query_arguments():
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    assert scrub(f"bad token {jwt} seen") == "bad token <jwt> seen"
    assert scrub("invalid input for query argument $2: '{\"email\": \"a@b.co\"}' (x)") == \
        "invalid input for query argument $2: <redacted>"
    assert len(scrub("x" * 10_000)) < 600


def test_the_api_the_worker_and_the_sandbox_log_one_json_format(tmp_path):
    """Issue 30: under make run, uvicorn's and httpx's plain lines sat between JSON lines with
    another timestamp format. Every line of every process is now one JSON object, its
    `timestamp` in one format, uvicorn's own lines included."""
    port, sandbox_port = free_port(), free_port()
    env = child_environ(PORT=str(port), LOG_LEVEL="info")
    logs = {name: tmp_path / f"{name}.log" for name in ("api", "worker", "sandbox")}
    commands = {"api": ["serve", "--port", str(port)], "worker": ["worker"],
                "sandbox": ["sandbox", "--port", str(sandbox_port)]}
    procs = []
    try:
        for name, args in commands.items():
            with logs[name].open("wb") as out:
                procs.append(subprocess.Popen([sys.executable, "-m", "app", *args], env=env, cwd=ROOT,
                                              stdout=out, stderr=subprocess.STDOUT))
        wait_http(f"http://127.0.0.1:{port}/healthz", process=procs[0])
        wait_http(f"http://127.0.0.1:{sandbox_port}/_sandbox/health", process=procs[2])
        httpx.get(f"http://127.0.0.1:{port}/api/gateway/v1/risk-items")  # an access line and a 400
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
    loggers = set()
    for name, path in logs.items():
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        assert lines, f"{name} logged nothing"
        for line in lines:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise AssertionError(f"{name} logged a line that is not JSON: {line!r}") from None
            assert stamp.match(record.get("timestamp", "")), f"{name}: {line!r}"
            assert record.get("event") and record.get("level"), f"{name}: {line!r}"
            loggers.add(record.get("logger"))
    assert "uvicorn.error" in loggers, "uvicorn's own lines go through the same logger"
