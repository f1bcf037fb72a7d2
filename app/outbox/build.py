"""The worker's composition root, as `create_app` is the API's: `build_worker(config)` makes
what the loop needs from the settings alone (the pool, the HTTP clients, the service token,
the metrics server, the deliverers), hands them to a Worker, and closes them when it ends.

    async with build_worker(config) as worker:
        await worker.run()

Nothing else in app/outbox/ reads the configuration: the loop only loops, the queue only calls
SQL, each deliverer only sends.
"""
from __future__ import annotations

import collections
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog

from app.config import Config
from app.db import PROCESS_NAME, Database
from app.outbox.deliverers import ApiBatch, Deliverers, Http, PlainCall, Webhooks, api_client, webhook_client
from app.outbox.queue import OutboxQueue, SigningSalts
from app.outbox.webhooks import SecretCache, WebhookSender
from app.outbox.worker import Worker
from app.tokens import service_tokens

log = structlog.get_logger("app.worker")


class DeliveryCounts:
    """Deliveries by result, kept here and, when metrics are served, in prometheus-client's
    counters (insurance_worker_deliveries_total, insurance_webhook_deliveries_total)."""

    def __init__(self, deliveries: Any = None, webhooks: Any = None) -> None:
        self.results: collections.Counter[str] = collections.Counter()
        self._deliveries = deliveries
        self._webhooks = webhooks

    def delivery(self, result: str) -> None:
        self.results[result] += 1
        if self._deliveries is not None:
            self._deliveries.labels(result).inc()

    def webhook(self, result: str) -> None:
        self.results["webhook_" + result] += 1
        if self._webhooks is not None:
            self._webhooks.labels(result).inc()


@contextlib.asynccontextmanager
async def build_worker(config: Config) -> AsyncIterator[Worker]:
    """A Worker over the outbox of `config`'s database, its resources open until the block ends."""
    # Its own pool (WORKER_DB_POOL_MIN/MAX): a worker waits its turn, it has no acquire timeout.
    db = Database(config.database_url, config.worker_db_pool_min, config.worker_db_pool_max,
                  config.db_statement_cache_size, acquire_timeout=None)
    queue = OutboxQueue(db, PROCESS_NAME, config.worker_lease_seconds, config.outbox_max_attempts)
    counts, claim_sizes, worker = DeliveryCounts(), None, None
    if config.worker_metrics_port:
        # prometheus-client's server (a thread) only when metrics are asked for: about 2 MB of
        # a worker's 48 that a worker without them does not load.
        from prometheus_client import start_http_server

        from app.metrics import webhook_metrics, worker_metrics
        deliveries, claim_sizes = worker_metrics(lambda: worker.inflight if worker is not None else 0)
        counts = DeliveryCounts(deliveries, webhook_metrics())
        start_http_server(config.worker_metrics_port, addr=config.worker_metrics_host)
        log.info("worker_metrics",
                 url=f"http://{config.worker_metrics_host}:{config.worker_metrics_port}/metrics")
    await queue.open()
    try:
        async with api_client(config.worker_concurrency, config) as client, \
                webhook_client(config.webhook_endpoint_concurrency, config.webhook_timeout) as partners:
            http = Http(client, config.public_base_url, service_tokens(config.secret("SERVICE_ROLE_SECRET")),
                        config.worker_lease_seconds, config.http_total_timeout, counts.delivery)
            sender = WebhookSender(
                partners, SecretCache(config.secret("WEBHOOK_SECRET_KEY"), SigningSalts(db, config.webhook_secret_overlap)),
                public_only=config.webhooks_public_only, timeout=config.webhook_timeout,
                retry_base=config.webhook_retry_base_seconds, retry_cap=config.webhook_retry_cap_seconds,
                per_endpoint=config.webhook_endpoint_concurrency, on_result=counts.webhook,
                max_wait=config.worker_lease_seconds / 3, max_waiting=config.worker_concurrency * 16)
            deliverers = Deliverers(ApiBatch(http), PlainCall(http), Webhooks(sender), config.worker_dispatch_batch)
            worker = Worker(queue, deliverers, concurrency=config.worker_concurrency, batch=config.worker_batch,
                            poll_interval=config.worker_poll_interval, grace_seconds=config.worker_grace_seconds,
                            listen_url=config.database_listen_url, claim_sizes=claim_sizes, name=PROCESS_NAME)
            log.info("worker_built", api=config.public_base_url)
            yield worker
    finally:
        await queue.close()
