"""Benchmark plumbing shared by the bench/*.py scripts.

- `bench_database()`: a database of its own (`insurance_bench`), migrated with sqitch.
- `serve(...)`: a real uvicorn process (uvloop, httptools) on a free port; its peak RSS.
- `wrk(...)`: load from wrk (Debian's package, installed when missing): req/s, p50, p99.
- `table(...)`: the figures as a plain-text table.
- `measured(...)`: a wrk round and the CPU microseconds each request cost the server process
  and its PostgreSQL backends (/proc): steadier than req/s on a loaded machine.
- `goal(...)` prints a figure beside its goal and keeps it; `record(bench, yardsticks)` then
  prints every kept figure and the same run's yardsticks on one line that bench/record.py reads
  (`make bench` writes them to bench/results.json; `make bench-compare` runs two commits).

Ratios, not absolute numbers, are what a run can be judged on: this machine is noisy, so
every script measures its yardstick in the same run.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BENCH_DB = os.environ.get("BENCH_DB", "insurance_bench")
PGHOST = os.environ.get("PGHOST", "127.0.0.1")
PGPORT = os.environ.get("PGPORT", "5432")
ADMIN_URL = f"postgresql://postgres@{PGHOST}:{PGPORT}/{BENCH_DB}"
APP_URL = f"postgresql://insurance_app@{PGHOST}:{PGPORT}/{BENCH_DB}"
SECRETS = {name: f"bench-{name.lower()}-0123456789abcdef0123456789abcdef" for name in (
    "POSTSALES_JWT_SECRET", "AUTH_SECRET", "AUTH_SECRET_V2", "AUTH_IA_SECRET", "AUTH_IA_SECRET_V2",
    "AUTH_INTEGRATION_SECRET", "AUTH_INTEGRATION_SECRET_V2", "SERVICE_ROLE_SECRET", "OTP_HASH_SECRET",
    "WEBHOOK_SECRET_KEY", "DEVICE_TOKEN_SECRET")}


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def bench_database(fresh: bool = True) -> str:
    """Create (or, by default, re-create: no state from an older plan) the bench database
    and deploy every change; its admin URL."""
    with psycopg.connect(f"postgresql://postgres@{PGHOST}:{PGPORT}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (BENCH_DB,)).fetchone()
        if exists and fresh:
            conn.execute(f'DROP DATABASE "{BENCH_DB}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')
    subprocess.run(["sqitch", "deploy", "--verify", f"db:pg://postgres@{PGHOST}:{PGPORT}/{BENCH_DB}"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return ADMIN_URL


def app_environ(**extra: str) -> dict[str, str]:
    return {**os.environ, "APP_ENV": "test", "DATABASE_URL": APP_URL, "ADMIN_DATABASE_URL": ADMIN_URL,
            "BARE_DATABASE_URL": ADMIN_URL, "LOG_LEVEL": "warning", **SECRETS, **extra}


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Current resident memory (VmRSS) of one process, in MB; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process and its children, in MB; the largest one."""
    peaks = []
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        except FileNotFoundError:
            pass
    return max(peaks, default=0.0)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found + [g for c in found for g in _children(c)]


@dataclass
class Server:
    url: str
    process: subprocess.Popen

    @property
    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.process.pid)


@contextlib.contextmanager
def serve(target: str, env: dict[str, str], workers: int = 1, health: str = "/healthz",
          http: list[str] | None = None) -> Iterator[Server]:
    """uvicorn serving `target` (module:app) as the real deployment does: the app with
    `serve`'s settings (app/commands/core.py: the bounded httptools protocol of app/server.py,
    no proxy-header rewriting), a yardstick on plain httptools; `http` replaces those
    protocol options (bench/server_limits.py compares them)."""
    port = free_port()
    if http is None:
        http = (["--http", "app.server:BoundedHttpToolsProtocol", "--no-proxy-headers"]
                if target.startswith("app.") else ["--http", "httptools"])
    command = [PYTHON, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port", str(port),
               "--loop", "uvloop", *http, "--no-access-log", "--log-level", "warning",
               "--workers", str(workers)]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    spy = None
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{target} exited with {process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + health, timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target} did not start")
            time.sleep(0.1)
        spy = _profile(process.pid, target, port)
        yield Server(url, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        if spy is not None:
            spy.wait(30)


def _profile(pid: int, target: str, port: int) -> subprocess.Popen | None:
    """BENCH_PYSPY=<folder>: py-spy records the app's server process until it ends (one raw
    stack file per server, to read with speedscope or a few lines of Python)."""
    folder = os.environ.get("BENCH_PYSPY")
    if not folder or not target.startswith("app."):
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([str(Path(PYTHON).parent / "py-spy"), "record", "--pid", str(pid), "-r", "200", "-f", "raw",
                             "--nonblocking", "-o", f"{folder}/{target.replace(':', '-')}-{port}.txt"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@dataclass
class Load:
    name: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def ensure_wrk() -> str:
    if not shutil.which("wrk"):
        log("installing wrk (Debian package)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False, env=env,
                       stdout=subprocess.DEVNULL)
        if not shutil.which("wrk"):
            subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
            subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env,
                           stdout=subprocess.DEVNULL)
    return shutil.which("wrk") or "wrk"


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float:
    match = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    return float(match.group(1)) * _UNITS[match.group(2)] if match else float("nan")


def wrk(name: str, url: str, headers: dict[str, str] | None = None, seconds: int = 10,
        connections: int = 32, threads: int = 1, script: str | None = None) -> Load:
    """Run wrk against `url`; non-2xx answers count as errors."""
    command = [ensure_wrk(), "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency"]
    for key, value in (headers or {}).items():
        command += ["-H", f"{key}: {value}"]
    if script:
        command += ["-s", script]
    out = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.MULTILINE).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE).group(1))
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    socket_errors = re.search(r"Socket errors:(.*)", out)
    if socket_errors:
        errors += sum(int(n) for n in re.findall(r"\d+", socket_errors.group(1)))
    return Load(name, rps, p50, p99, errors)


TICKS = os.sysconf("SC_CLK_TCK")

# The guide's targets for the read paths, as ratios to the bare SELECT of the same run.
HOLDER_GOAL, GATEWAY_GOAL, TRPC_GOAL, P99_GOAL = 0.85, 0.7, 0.75, 2.0


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """utime + stime of each process, in seconds (processes that ended are left out)."""
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return found


def backends(user: str) -> list[int]:
    """The bench database's backends of login `user`."""
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND usename = %s AND pid <> pg_backend_pid()",
            (BENCH_DB, user))]


def measured(name: str, url: str, headers: dict | None, server: Server, db_user: str,
             seconds: int, connections: int) -> tuple[Load, tuple[float, float]]:
    """wrk against url, and the CPU microseconds per request of the server process and of its
    PostgreSQL backends (those of `db_user`: the app's insurance_app, the yardstick's postgres)."""
    before = cpu_seconds([server.process.pid, *backends(db_user)])
    load = wrk(name, url, headers=headers, seconds=seconds, connections=connections)
    after = cpu_seconds([server.process.pid, *backends(db_user)])
    requests = max(load.rps * seconds, 1)
    app = (after.pop(server.process.pid, 0.0) - before.get(server.process.pid, 0.0)) / requests * 1e6
    db = sum(t - before.get(pid, 0.0) for pid, t in after.items()) / requests * 1e6
    return load, (app, db)


def medians(loads: list[Load]) -> Load:
    """One row of several rounds of a load: the median of each figure, the sum of the errors."""
    return Load(loads[0].name, statistics.median(r.rps for r in loads), statistics.median(r.p50_ms for r in loads),
                statistics.median(r.p99_ms for r in loads), sum(r.errors for r in loads))


def cpu_table(costs: dict[str, tuple[float, float]], baseline: str) -> str:
    """CPU per request of each row (server, PostgreSQL, both) and the yardstick's over it."""
    bare_app, bare_db = costs[baseline]
    lines = [f"{'CPU per request':<34} {'app us':>10} {'db us':>8} {'total':>8} {'app ratio':>10} {'total ratio':>12}"]
    for name, (app_us, db_us) in costs.items():
        lines.append(f"{name:<34} {app_us:>10.0f} {db_us:>8.0f} {app_us + db_us:>8.0f} {bare_app / app_us:>10.2f} "
                     f"{(bare_app + bare_db) / (app_us + db_us):>12.2f}")
    return "\n".join(lines)


def table(rows: list[Load], baseline: Load) -> str:
    """req/s, p50, p99 and errors of each row; its throughput ratio and its p99 against the
    yardstick's (p99 x bare)."""
    lines = [f"{'endpoint':<34} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'ratio':>6} {'p99 x bare':>10}"]
    for row in rows:
        lines.append(f"{row.name:<34} {row.rps:>10.0f} {row.p50_ms:>8.2f} {row.p99_ms:>8.2f} "
                     f"{row.errors:>7} {row.rps / baseline.rps:>6.2f} {row.p99_ms / baseline.p99_ms:>10.2f}")
    return "\n".join(lines)


RECORD_PREFIX = "BENCH-RECORD "
_figures: dict[str, dict[str, float | bool | str]] = {}


def goal(what: str, value: float, target: float, at_most: bool = False, unit: str = "") -> bool:
    """One line: a figure of issue 14's table beside its goal; True when met. Kept for record()."""
    met = value <= target if at_most else value >= target
    _figures[what] = {"value": round(value, 4), "goal": target, "at_most": at_most, "met": met, "unit": unit.strip()}
    print(f"{'goal met   ' if met else 'GOAL MISSED'}  {what}: {value:.2f}{unit} "
          f"({'at most' if at_most else 'at least'} {target:g}{unit})")
    return met


def record(bench: str, yardsticks: dict[str, float], **figures: float) -> None:
    """One machine-readable line: this run's goal() figures (and any other `figures`) beside the
    yardsticks measured in the same run, for bench/record.py."""
    import json
    kept = {**_figures, **{name: {"value": round(value, 4)} for name, value in figures.items()}}
    print(RECORD_PREFIX + json.dumps({"bench": bench, "figures": kept,
                                      "yardsticks": {k: round(v, 4) for k, v in yardsticks.items()}},
                                     sort_keys=True), flush=True)
    _figures.clear()


def rss_line(processes: dict[str, float]) -> str:
    return "peak RSS (VmHWM): " + ", ".join(f"{name} {mb:.0f} MB" for name, mb in processes.items())


@contextlib.contextmanager
def pgbouncer() -> Iterator[int]:
    """scripts/pgbouncer.sh: a throwaway PgBouncer (transaction pooling) in front of the
    local PostgreSQL; its port."""
    import tempfile
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run([str(ROOT / "scripts/pgbouncer.sh"), "start", str(port), directory], check=True)
        try:
            yield port
        finally:
            subprocess.run([str(ROOT / "scripts/pgbouncer.sh"), "stop", directory], check=False)


def through_pgbouncer(url: str, port: int) -> str:
    """The same database URL, through PgBouncer on `port`."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()
