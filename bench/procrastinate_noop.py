"""The peer of bench/emissions.py: a procrastinate app with one no-op task."""
from __future__ import annotations

import os

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["BENCH_PROCRASTINATE_URL"]))


@app.task(name="noop")
def noop() -> None:
    pass
