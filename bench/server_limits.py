"""Benchmark: what the request limits of app/server.py cost, against uvicorn as it was, in one run.

    make bench-server-limits      # or: .venv/bin/python -m bench.server_limits [--seconds 3]

The same app (app.asgi:app) served four ways, loaded in alternating rounds on GET /healthz
(the cheapest route, where the HTTP layer's share is largest) with wrk:

- httptools, uvicorn's proxy-header middleware: what `serve` ran before (no limits);
- app/server.py's bounded protocol with proxy headers: the limits alone;
- the bounded protocol without uvicorn's proxy middleware: what `serve` runs now;
- h11 with h11_max_incomplete_event_size=16 KiB: the other way to get a header limit.

Prints each one's median req/s and its ratio to the first (median of the rounds' ratios).
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("BENCH_DB", "insurance_bench_server")

from bench.lib import app_environ, bench_database, log, serve, table, wrk
from bench.postsales import median

WAYS = {
    "httptools + proxy headers (before)": ["--http", "httptools", "--proxy-headers"],
    "bounded + proxy headers": ["--http", "app.server:BoundedHttpToolsProtocol", "--proxy-headers"],
    "bounded, no proxy rewrite (serve)": ["--http", "app.server:BoundedHttpToolsProtocol", "--no-proxy-headers"],
    "h11, 16 KiB incomplete event": ["--http", "h11", "--h11-max-incomplete-event-size", "16384"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="per round")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    log("deploying the bench database (the app's lifespan opens a pool)")
    bench_database(fresh=False)
    env = app_environ()
    import contextlib
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(serve("app.asgi:app", env, http=http)) for name, http in WAYS.items()}
        for server in servers.values():
            wrk("warm-up", server.url + "/healthz", seconds=1, connections=args.connections)
        rounds: dict[str, list] = {name: [] for name in WAYS}
        for number in range(args.rounds):
            for name, server in servers.items():
                rounds[name].append(wrk(name, server.url + "/healthz", seconds=args.seconds,
                                        connections=args.connections))
            log(f"round {number + 1}: " + ", ".join(f"{n} {r[-1].rps:.0f}" for n, r in rounds.items()))
    first = next(iter(WAYS))
    print(f"GET /healthz, {args.connections} connections, median of {args.rounds} alternating rounds of {args.seconds} s")
    print(table([median(rounds[name]) for name in WAYS], median(rounds[first])))
    for name in list(WAYS)[1:]:
        paired = sorted(a.rps / b.rps for b, a in zip(rounds[first], rounds[name]))
        print(f"{name} / before, each round: " + ", ".join(f"{r:.2f}" for r in paired)
              + f"  (median {paired[len(paired) // 2]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
