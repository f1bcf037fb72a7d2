"""The worker's deliverers: each sends rows of one kind and answers one outcome per row, in
the shape outbox.record_deliveries takes ({id, status, error, retry?, retryIn?, defer?}).

    ApiBatch    rows that name a batch url (X-Outbox-Batch): one request of the outbox batch
                protocol to our own API, each row still its own outcome
    PlainCall   any other row, alone: a path of our own API (with the service bearer) or a URL
    Webhooks    partner webhooks, signed (app/outbox/webhooks.py sends them by app/webhooks.py's rules)

`Deliverers.route(rows)` says which deliverer takes which rows. The batch protocol:

    POST <batch url>  {"requests": [{"id": outbox id, "path": row url, "body": row body}, ...]}
    200 {"data": {"results": [{"id", "status": what the row's own url would answer, "error"?}]}}

A 401 or 403 from our own API means this worker holds the wrong SERVICE_ROLE_SECRET: a
configuration error, never a delivery. The row stays in the queue (with its backoff) for a
worker that holds the right one, and dies after OUTBOX_MAX_ATTEMPTS like any failing row.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol

import orjson
import structlog

from app.outbox.http import failure_name, session
from app.outbox.queue import DATABASE_ERRORS
from app.outbox.webhooks import EndpointClients, WebhookSender
from app.tokens import TokenService

log = structlog.get_logger("app.worker")

Row = dict[str, Any]
Outcome = dict[str, Any]

# The header by which a row names the url that may take it with others (not sent on).
BATCH_HEADER = "X-Outbox-Batch"
# Answers of our own API that say this worker's credentials are wrong.
CONFIG_ERROR_STATUSES = frozenset({401, 403})
# Delivery results (the `result` label of insurance_worker_deliveries_total).
OK, REJECTED, RETRY, CONFIG_ERROR = "ok", "rejected", "retry", "config_error"
# Answers after which outbox.record_deliveries puts a row back in the queue (with no answer and 5xx).
RETRIED_STATUSES = frozenset({408, 409, 425, 429})
# A delivery ends this long (at most a quarter of the lease) before its lease does, so that its
# outcome is recorded while the row is still this worker's: a slow peer is never delivered twice.
LEASE_MARGIN_SECONDS = 10.0


class Deliverer(Protocol):
    async def deliver(self, rows: list[Row]) -> list[Outcome]:
        """One outcome per row, in any order; raises only when cancelled."""


def delivery_deadline(lease_seconds: float, total_timeout: float, own_api: bool) -> float:
    """The TOTAL time one delivery may take, connection to last byte. Our own API answers a
    dispatch once its provider calls end (HTTP_TOTAL_TIMEOUT, app/orchestrator/pipeline.py), so
    it gets the whole lease but the margin; any other peer (chat, partner webhooks) gets
    HTTP_TOTAL_TIMEOUT, and never more than that."""
    cap = lease_seconds - min(LEASE_MARGIN_SECONDS, lease_seconds / 4)
    return cap if own_api else min(total_timeout, cap)


class DeadlineExceeded(Exception):
    """A delivery's total deadline passed: no answer (the row is retried with backoff)."""


class Answer(NamedTuple):
    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Http:
    """What the API batch and the plain call share: one pooled client (api_client), each
    delivery's total deadline, the service-role bearer (only this process holds it) and the
    result counter."""

    def __init__(self, client: Any, api_base_url: str, tokens: TokenService,
                 lease_seconds: float, total_timeout: float,
                 count: Callable[[str], None] = lambda result: None) -> None:
        self.client = client
        self.api_base_url = api_base_url
        self.tokens = tokens
        self.lease_seconds = lease_seconds
        self.total_timeout = total_timeout
        self.count = count
        self._token: tuple[str, float] = ("", 0.0)

    def bearer(self) -> str:
        token, expires = self._token
        if time.time() > expires - 600:
            token = self.tokens.issue("outbox-worker")
            self._token = (token, time.time() + self.tokens.lifetime)
        return token

    async def send(self, method: str, url: str, headers: dict[str, str], content: bytes,
                   own_api: bool) -> Answer:
        """One outbound request, answer read whole, within its total deadline (delivery_deadline).
        Raises DeadlineExceeded, or aiohttp's errors (its connect and read timeouts among them)."""
        seconds = delivery_deadline(self.lease_seconds, self.total_timeout, own_api)
        try:
            async with asyncio.timeout(seconds) as deadline:
                async with self.client.request(method, url, headers=headers, data=content,
                                               allow_redirects=False) as resp:
                    return Answer(resp.status, await resp.read())
        except TimeoutError:
            if not deadline.expired():
                raise  # aiohttp's own: a connect or read timeout, named by _failure
            raise DeadlineExceeded(f"no complete answer within {seconds:g} s (total deadline, "
                                   f"shorter than the {self.lease_seconds:g} s lease)") from None

    def outcome(self, row_id: int, status: int | None, error: str | None, own_api: bool) -> Outcome:
        """A row's outcome for outbox.record_deliveries, counted under its result."""
        outcome: Outcome = {"id": row_id, "status": status, "error": error}
        if own_api and status in CONFIG_ERROR_STATUSES:
            outcome["retry"] = True  # not a delivery: kept for a worker with the right secret
            name = CONFIG_ERROR
        elif status is None or status >= 500 or status in RETRIED_STATUSES:
            name = RETRY
        else:
            name = OK if status < 400 else REJECTED
        self.count(name)
        return outcome


async def each(one: Callable[[Row], Awaitable[Outcome]], rows: list[Row]) -> list[Outcome]:
    """one(row) for each row, concurrently; a row alone (each webhook is) is awaited in the
    caller's task, not in one more that gather would make for it."""
    if len(rows) == 1:
        return [await one(rows[0])]
    return list(await asyncio.gather(*(one(row) for row in rows)))


def _failure(exc: BaseException) -> str:
    if isinstance(exc, DeadlineExceeded):
        return str(exc)
    name = failure_name(exc)
    if name is not None:
        return f"{name}: {exc}"[:500]
    return type(exc).__name__  # a bad row must not stop the worker


def _log_config_errors(outcomes: list[Outcome]) -> None:
    refused = [o for o in outcomes if o.get("retry") and o["status"] in CONFIG_ERROR_STATUSES]
    if refused:
        log.error("worker_config_error", status=refused[0]["status"], rows=len(refused),
                  hint="the API refused this worker's SERVICE_ROLE_SECRET: the rows stay queued for a "
                       "worker that holds the API's own")


class PlainCall:
    """Each row alone: its method, url (a path goes to our own API with the bearer), headers and body."""

    def __init__(self, http: Http) -> None:
        self.http = http

    async def deliver(self, rows: list[Row]) -> list[Outcome]:
        outcomes = await each(self._one, rows)
        _log_config_errors(outcomes)
        return outcomes

    async def _one(self, row: Row) -> Outcome:
        url: str = row["url"]
        own_api = url.startswith("/")
        headers = {str(k): str(v) for k, v in (row.get("headers") or {}).items() if k != BATCH_HEADER}
        if own_api:
            url = self.http.api_base_url + url
            headers["Authorization"] = f"Bearer {self.http.bearer()}"
        headers.setdefault("Content-Type", "application/json")
        headers["X-Request-Id"] = f"outbox-{row['id']}-{row['attempts']}"
        status: int | None = None
        error: str | None = None
        try:
            resp = await self.http.send(row["method"], url, headers, orjson.dumps(row.get("body")), own_api)
            status = resp.status
            if status >= 300:
                error = resp.text[:500]
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the call is this row's outcome, retried by the outbox
            error = _failure(exc)
        return self.http.outcome(row["id"], status, error, own_api)


class ApiBatch:
    """Rows of one batch url in one request to our own API."""

    def __init__(self, http: Http) -> None:
        self.http = http

    async def deliver(self, rows: list[Row]) -> list[Outcome]:
        batch_url = rows[0]["headers"][BATCH_HEADER]
        body = {"requests": [{"id": r["id"], "path": r["url"], "body": r.get("body")} for r in rows]}
        headers = {"Authorization": f"Bearer {self.http.bearer()}", "Content-Type": "application/json",
                   "X-Request-Id": f"outbox-batch-{rows[0]['id']}-{len(rows)}"}
        answered: dict[int, tuple[int | None, str | None]] = {}
        try:
            resp = await self.http.send("POST", self.http.api_base_url + batch_url, headers,
                                        orjson.dumps(body), own_api=True)
            if resp.status == 200:
                for result in orjson.loads(resp.body)["data"]["results"]:
                    error = orjson.dumps(result["error"]).decode() if result.get("error") else None
                    answered[result["id"]] = (result.get("status"), error)
            else:
                answered = {r["id"]: (resp.status, resp.text[:500]) for r in rows}
        except asyncio.CancelledError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            answered = {r["id"]: (None, f"unreadable batch answer: {type(exc).__name__}") for r in rows}
        except Exception as exc:  # noqa: BLE001 - any failure of the batch call is each row's outcome, retried by the outbox
            answered = {r["id"]: (None, _failure(exc)) for r in rows}
        outcomes = [self.http.outcome(r["id"], *answered.get(r["id"], (None, "missing from the batch answer")),
                                      own_api=True) for r in rows]
        _log_config_errors(outcomes)
        return outcomes


def api_client(max_connections: int, config) -> Any:
    """The client of our own API and of plain calls (an aiohttp session, app/outbox/http.py).
    The API answers a dispatch once its provider calls end (HTTP_TOTAL_TIMEOUT at most)."""
    return session(max_connections, connect_timeout=config.http_connect_timeout,
                   read_timeout=max(config.http_read_timeout, config.http_total_timeout + 15))


def webhook_client(per_endpoint: int, timeout: float) -> EndpointClients:
    """The webhooks' clients, of their own: partners' endpoints never share the API's connection
    pool, nor each other's (app/outbox/webhooks.py EndpointClients: a pool per endpoint, its connections
    kept alive)."""
    return EndpointClients(per_endpoint, timeout)


class Webhooks:
    """Partner webhooks, each row on its own (app/outbox/webhooks.py WebhookSender: its endpoint's turn, the
    signature, the POST)."""

    def __init__(self, deliverer: WebhookSender) -> None:
        self.deliverer = deliverer

    @property
    def waiting(self) -> int:
        """Rows waiting for their endpoint's turn: they hold none of the worker's slots."""
        return self.deliverer.waiting

    async def deliver(self, rows: list[Row]) -> list[Outcome]:
        return await each(self._one, rows)

    async def _one(self, row: Row) -> Outcome:
        try:
            return await self.deliverer.deliver(row)
        except asyncio.CancelledError:
            raise
        except DATABASE_ERRORS as exc:  # the secrets could not be read: try again soon, no attempt lost
            log.warning("worker_webhook_secrets_failed", error=type(exc).__name__)
            return {"id": row["id"], "status": None, "error": None, "defer": 2}
        except Exception as exc:  # noqa: BLE001 - a bad row must not stop the worker
            return {"id": row["id"], "status": None, "error": type(exc).__name__, "retry": True}


class Deliverers:
    """Which deliverer takes which claimed rows."""

    def __init__(self, api_batch: ApiBatch, plain: PlainCall, webhooks: Webhooks, batch_size: int) -> None:
        self.api_batch = api_batch
        self.plain = plain
        self.webhooks = webhooks
        self.batch_size = max(1, batch_size)

    def route(self, rows: list[Row]) -> list[tuple[Deliverer, list[Row]]]:
        """Webhooks one row a task (each waits for its own endpoint), rows of one batch url in
        chunks of batch_size (a chunk of one goes alone), the rest one row a task."""
        routes: list[tuple[Deliverer, list[Row]]] = []
        batches: dict[str, list[Row]] = {}
        for row in rows:
            batch_url = (row.get("headers") or {}).get(BATCH_HEADER)
            if WebhookSender.is_webhook(row):
                routes.append((self.webhooks, [row]))
            elif batch_url and row["url"].startswith("/"):
                batches.setdefault(batch_url, []).append(row)
            else:
                routes.append((self.plain, [row]))
        for chunked in batches.values():
            for i in range(0, len(chunked), self.batch_size):
                chunk = chunked[i:i + self.batch_size]
                routes.append((self.api_batch if len(chunk) > 1 else self.plain, chunk))
        return routes
