"""Prometheus metrics (prometheus-client), every name prefixed `insurance_`.

The API counts and times every request by route template (never the raw path) and every
provider call; the database's gauges are read at scrape time by one SQL function
(`insurance.read_metrics`). The worker serves its own on `--metrics-port`.

`serve --workers N` runs N processes; `app.commands.core.serve` then points
PROMETHEUS_MULTIPROC_DIR at a fresh directory before any of them imports this module, so that
prometheus-client keeps each process's values in a shared file and a scrape, answered by any
one process, adds them all up.
"""
from __future__ import annotations

import asyncio
import bisect
import ipaddress
import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # noqa: F401 - what app/health.py answers /metrics with
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

# Seconds; the API answers in milliseconds, a provider call may take its whole timeout.
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
PROVIDER_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter("insurance_http_requests", "HTTP requests answered, by surface and route template",
                        ["surface", "route", "method", "status"])
HTTP_DURATION = Histogram("insurance_http_request_duration_seconds",
                          "Time to answer an HTTP request, by surface and route template",
                          ["surface", "route", "method"], buckets=HTTP_BUCKETS)
PROVIDER_CALLS = Counter("insurance_provider_calls", "Emissions sent to an insurer, by outcome (SUCCESS or the error code)",
                         ["provider", "outcome"])
PROVIDER_DURATION = Histogram("insurance_provider_call_duration_seconds",
                              "Time of one emission to an insurer (token and call)", ["provider"],
                              buckets=PROVIDER_BUCKETS)

# Route template prefix -> surface label (the first that matches).
_SURFACES = (
    ("/api/postsales/", "postsales"),
    ("/api/integrations/post-sales", "postsales"),
    ("/api/gateway/", "gateway"),
    ("/api/integrations/", "integrations"),
    ("/api/trpc", "dashboard"),
    ("/api/auth/", "dashboard"),
    ("/backoffice", "backoffice"),
)
UNMATCHED = "(unmatched)"  # no route: the path itself would make a label per scanner request


def surface_of(route: str) -> str:
    for prefix, surface in _SURFACES:
        if route.startswith(prefix):
            return surface
    return "core"


class RequestMetrics:
    """The HTTP metrics of one process, counted on the hot path in plain dicts and added to
    prometheus-client's metrics at most every `flush_seconds` (and before each scrape this
    process answers). A prometheus-client counter and histogram update per request take locks
    and loop over buckets (bench-postsales' ratio felt it); a dict entry and a bisect do not.
    A scrape answered by another process of `serve --workers N` may lag this one by at most
    `flush_seconds`."""

    def __init__(self, flush_seconds: float = 1.0) -> None:
        self.flush_seconds = flush_seconds
        self._counts: dict[tuple[str, str, str, int], int] = {}
        # (surface, route, method) -> per bucket (HTTP_BUCKETS, then +Inf) counts, then the sum.
        self._timings: dict[tuple[str, str, str], list] = {}
        self._flush_due = False

    def observe(self, surface: str, route: str, method: str, status: int, seconds: float) -> None:
        key = (surface, route, method, status)
        self._counts[key] = self._counts.get(key, 0) + 1
        timing = self._timings.get(key[:3])
        if timing is None:
            timing = self._timings[key[:3]] = [0] * (len(HTTP_BUCKETS) + 1) + [0.0]
        timing[bisect.bisect_left(HTTP_BUCKETS, seconds)] += 1  # the first bound >= seconds
        timing[-1] += seconds
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_later(self.flush_seconds, self.flush)

    def flush(self) -> None:
        """Add what was counted since the last flush to prometheus-client's metrics."""
        self._flush_due = False
        counts, self._counts = self._counts, {}
        timings, self._timings = self._timings, {}
        for (surface, route, method, status), n in counts.items():
            HTTP_REQUESTS.labels(surface, route, method, str(status)).inc(n)
        for labels, timing in timings.items():
            child = HTTP_DURATION.labels(*labels)
            # Histogram.observe() adds one observation; these are many. Its buckets hold
            # per-bucket (not cumulative) counts, as observe() fills them.
            for bucket, n in zip(child._buckets, timing):
                if n:
                    bucket.inc(n)
            child._sum.inc(timing[-1])


def observe_provider_call(provider: str, outcome: str, seconds: float) -> None:
    PROVIDER_CALLS.labels(provider, outcome).inc()
    PROVIDER_DURATION.labels(provider).observe(seconds)


# -- the scrape --------------------------------------------------------------------------

def address_allowed(address: str | None, networks: Iterable) -> bool:
    """Whether `address` lies in one of `networks` (Config.metrics_allowed_ips)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in net for net in networks)


class _DatabaseGauges:
    """The gauges of one `insurance.read_metrics()` answer (None: the database did not answer)."""

    def __init__(self, data: dict[str, Any] | None) -> None:
        self.data = data

    def collect(self):
        up = GaugeMetricFamily("insurance_database_up", "1 when the database answered this scrape")
        up.add_metric([], 0 if self.data is None else 1)
        yield up
        if self.data is None:
            return
        d = self.data
        yield GaugeMetricFamily("insurance_outbox_pending", "Outbox rows not yet delivered",
                                value=d["outboxPending"])
        yield GaugeMetricFamily("insurance_outbox_oldest_pending_age_seconds",
                                "How long the most overdue outbox row has been due",
                                value=d["outboxOldestPendingAgeSeconds"])
        yield GaugeMetricFamily("insurance_outbox_dead", "Outbox rows given up on (dead letters)",
                                value=d["outboxDead"])
        if "webhooksPending" in d:
            yield GaugeMetricFamily("insurance_webhook_pending", "Partner webhook deliveries not yet delivered (dead ones aside)",
                                    value=d["webhooksPending"])
            yield GaugeMetricFamily("insurance_webhook_oldest_pending_age_seconds",
                                    "How long the most overdue partner webhook delivery has been due",
                                    value=d["webhooksOldestPendingAgeSeconds"])
            yield GaugeMetricFamily("insurance_webhook_dead", "Partner webhook deliveries given up on (dead letters)",
                                    value=d["webhooksDead"])
        emissions = GaugeMetricFamily("insurance_emissions", "Emissions by status and provider",
                                      labels=["status", "provider"])
        for row in d["emissions"]:
            emissions.add_metric([row["status"], row["provider"]], row["count"])
        yield emissions
        sweep = GaugeMetricFamily("insurance_retry_sweep_last_run_timestamp_seconds",
                                  "When the minute retry sweep last ran (Unix time; absent before its first run)")
        if d.get("retrySweepLastRunAt") is not None:
            sweep.add_metric([], d["retrySweepLastRunAt"])
        yield sweep
        ceilings = CounterMetricFamily("insurance_account_ceiling_trips",
                                       "Account-wide failure ceilings reached (each also an audit row), by kind: "
                                       "dashboard_login, otp_request, otp_verify (docs/security.md)",
                                       labels=["kind"])
        for kind, trips in sorted((d.get("accountCeilingTrips") or {}).items()):
            ceilings.add_metric([kind], trips)
        yield ceilings
        archive = d.get("archive")
        if archive:  # pg_stat_archiver: is continuous archiving (docs/operations.md "Backups and restore") working?
            yield GaugeMetricFamily("insurance_wal_archiving_enabled", "1 when PostgreSQL archives WAL (archive_mode)",
                                    value=1 if archive["enabled"] else 0)
            yield CounterMetricFamily("insurance_wal_archived", "WAL segments archived (since the statistics' reset)",
                                      value=archive["archived"])
            yield CounterMetricFamily("insurance_wal_archive_failures",
                                      "Failed attempts to archive a WAL segment (since the statistics' reset)",
                                      value=archive["failed"])
            for name, key, doc in (
                    ("insurance_wal_last_archived_timestamp_seconds", "lastArchivedAt",
                     "When the last WAL segment was archived (Unix time; absent before the first)"),
                    ("insurance_wal_last_archive_failure_timestamp_seconds", "lastFailedAt",
                     "When archiving last failed (Unix time; absent when it never failed)")):
                moment = GaugeMetricFamily(name, doc)
                if archive.get(key) is not None:
                    moment.add_metric([], float(archive[key]))
                yield moment


def exposition(database: dict[str, Any] | None) -> bytes:
    """The text exposition: this process's (or, in multiprocess mode, every process's)
    metrics, then the database's gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        own = generate_latest(registry)
    else:
        own = generate_latest()
    gauges = CollectorRegistry(auto_describe=False)
    gauges.register(_DatabaseGauges(database))
    return own + generate_latest(gauges)


# -- the worker's ------------------------------------------------------------------------

_worker: tuple[Counter, Histogram, Gauge] | None = None


def worker_metrics(inflight) -> tuple[Counter, Histogram]:
    """The worker's counter of deliveries by result and its claim size histogram; its
    in-flight gauge reads `inflight()` at scrape time (nothing to update on the hot path).
    Made once per process (a registry refuses a name twice)."""
    global _worker
    if _worker is not None:
        _worker[2].set_function(inflight)
        return _worker[0], _worker[1]
    deliveries = Counter("insurance_worker_deliveries", "Outbox rows delivered, by result "
                         "(ok: final 2xx/3xx; rejected: final 4xx; retry: no answer, 408, 409, 425, 429 or 5xx; "
                         "config_error: our own API refused the worker's secret)",
                         ["result"])
    claim = Histogram("insurance_worker_claim_batch_size", "Outbox rows claimed per claim",
                      buckets=(0, 1, 2, 5, 10, 25, 50, 100, 250))
    gauge = Gauge("insurance_worker_inflight", "Outbox deliveries in flight")
    gauge.set_function(inflight)
    _worker = (deliveries, claim, gauge)
    return deliveries, claim


_webhooks: Counter | None = None


def webhook_metrics() -> Counter:
    """insurance_webhook_deliveries_total{result}: delivered (2xx), failed (another answer,
    redirects included), timeout, unreachable, refused (an address or URL that may not be
    called, or a channel without a secret). Made once per process."""
    global _webhooks
    if _webhooks is None:
        _webhooks = Counter("insurance_webhook_deliveries", "Partner webhook deliveries, by result "
                            "(delivered, failed, timeout, unreachable, refused)", ["result"])
    return _webhooks
