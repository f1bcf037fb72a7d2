"""What one partner webhook costs the worker, beside the price of a bare HTTP call.

    .venv/bin/python -m bench.webhook_send [--deliveries 3000] [--rounds 2]

Starts the provider sandbox (its webhook receiver verifies every signature) and, in this
process, delivers the same signed event again and again to it, in alternating rounds:
  - bare aiohttp: an unsigned POST of the same body, 4 in flight (the yardstick: an HTTP call);
  - bare httpx:   the same with httpx's default pool;
  - deliverer:    app/outbox/deliverers.Webhooks as the worker runs it (the endpoint's 4 slots,
                  the secrets, the signature, the POST, the answer read).
Prints deliveries/s and this process's CPU per delivery for each, and the deliverer's ratio
to the bare call. No database: the worker's SQL is bench-emissions' part.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid

import httpx
import orjson

from bench.lib import PYTHON, ROOT, app_environ, free_port, log
from tests.conftest import wait_http

BODY = {"type": "emission.succeeded", "timestamp": "2026-01-01T00:00:00Z",
        "data": {"emissionId": 1, "riskItemId": 2, "riskItemUid": str(uuid.uuid4()), "policyUid": "p-1",
                 "provider": "PROVIDER_A", "event": "SALES_DISPATCH", "status": "SUCCESS", "externalId": "X-1",
                 "attempts": 1, "nextRetryAt": None, "error": None}}
IN_FLIGHT = 4


async def _timed(n: int, one) -> tuple[float, float]:
    """(deliveries/s, CPU µs per delivery of this process) of n calls of one(i), IN_FLIGHT at once."""
    queue = iter(range(n))

    async def lane() -> None:
        for i in queue:
            await one(i)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(IN_FLIGHT)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return n / wall, 1e6 * cpu / n


async def bare_aiohttp(url: str, n: int) -> tuple[float, float]:
    import aiohttp
    raw = orjson.dumps(BODY)
    async with aiohttp.ClientSession() as session:
        async def one(i: int) -> None:
            async with session.post(url, data=raw, headers={"Content-Type": "application/json"}) as resp:
                await resp.read()
        return await _timed(n, one)


async def bare_httpx(url: str, n: int) -> tuple[float, float]:
    raw = orjson.dumps(BODY)
    async with httpx.AsyncClient() as client:
        async def one(i: int) -> None:
            (await client.post(url, content=raw, headers={"Content-Type": "application/json"})).read()
        return await _timed(n, one)


async def deliverer(url: str, n: int, secret: str) -> tuple[float, float]:
    from app.outbox.deliverers import Webhooks, webhook_client
    from app.outbox.webhooks import WebhookSender

    async def secrets_of(channel: str) -> list[str]:
        return [secret]

    channel = str(uuid.uuid4())
    async with webhook_client(64, 10.0) as client:  # one endpoint: 64 connections
        webhooks = Webhooks(WebhookSender(client, secrets_of, public_only=False))

        async def one(i: int) -> None:
            [outcome] = await webhooks.deliver([{"id": i, "url": url, "attempts": 1, "body": BODY,
                                                 "headers": {"X-Outbox-Webhook": channel, "webhook-id": f"msg_{i}"}}])
            assert outcome["error"] is None, outcome
        return await _timed(n, one)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from app.webhooks import derive_secret
    secret = derive_secret("bench-" + "k" * 40, b"salt")
    port = free_port()
    sandbox = subprocess.Popen([PYTHON, "-m", "app", "sandbox", "--port", str(port)], cwd=ROOT,
                               env=app_environ(LOG_LEVEL="warning"), stdout=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/_sandbox/health")
        httpx.put(f"{base}/_sandbox/webhooks/bench", json={"secret": secret}).raise_for_status()
        url = f"{base}/_sandbox/webhooks/bench"
        runs = {"bare aiohttp": lambda: bare_aiohttp(url, args.deliveries),
                "bare httpx": lambda: bare_httpx(url, args.deliveries),
                "deliverer": lambda: deliverer(url, args.deliveries, secret)}
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for r in range(args.rounds):
            for name, run in runs.items():
                found[name].append(asyncio.run(run()))
                rate, cpu = found[name][-1]
                log(f"round {r + 1} {name}: {rate:7.0f}/s, {cpu:5.0f} us CPU per delivery")
        yard = statistics.median(cpu for _, cpu in found["bare aiohttp"])
        for name, values in found.items():
            rate = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            print(f"{name:13s} {rate:7.0f}/s  {cpu:5.0f} us CPU per delivery  ({cpu / yard:4.2f}x the bare aiohttp call)")
    finally:
        sandbox.terminate()
        sandbox.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
