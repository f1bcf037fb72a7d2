"""The transport under each provider's httpx.AsyncClient: aiohttp's connection pool.

httpx stays the API (AsyncClient, Timeout, Limits, its exceptions); only the connection pool
changes. httpcore 1.0's pool re-scans every connection on each request and wakes every
queued request whenever one connection frees up, so its throughput falls as concurrency
rises (bench/orchestrator.py: from about 190 emits/s with one call in flight to under 50
with 64 on this machine); aiohttp's pool keeps its pace. httpx-aiohttp maps aiohttp's
errors onto httpx's, except that it reports a refused connection as a ConnectTimeout: fixed
here, so that the orchestrator tells "unreachable" from "too slow".
"""
from __future__ import annotations

import httpx
from httpx_aiohttp import AiohttpTransport


class ProviderTransport(AiohttpTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except httpx.TimeoutException as exc:
            if exc.__cause__ is None or isinstance(exc.__cause__, TimeoutError):
                raise
            raise httpx.ConnectError(str(exc), request=request) from exc.__cause__
        except httpx.HTTPError:
            raise
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
