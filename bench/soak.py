"""The soak: a mixed load at a steady, bounded rate for minutes or an hour, then the invariants.

    make soak MINUTES=10                 # or: .venv/bin/python -m bench.soak --minutes 10 [--rate 1]
    .venv/bin/python -m bench.soak --seconds 30   # a short run (tests/system/test_soak.py)

On a throwaway database (deployed with sqitch, dropped at the end) it starts the provider sandbox,
the API (`serve`) and one outbox worker as real processes, as bench/emissions.py does, and sends,
each operation on its own fixed schedule (open loop: a slow answer does not slow the schedule;
at most --in-flight requests of one operation at once, a tick beyond it counted as `skipped`):

  - partners: authorize (API key -> token), create risk items (each channel has a webhook on the
    sandbox's receiver, so every item's emission.succeeded goes to a partner), list, read one;
  - holders: e-mail logins (code requested, caught by the sandbox's mail catcher, verified) and
    their lists of items;
  - the back-office: a login, then its pages (home, emissions, outbox, search, a risk item) and
    the dashboard's tRPC byRiskItem;
  - and the worker drains the outbox: every item is issued at PROVIDER_A, every event delivered.

Every minute (every --report-seconds) one line per operation: requests, rate, p99, 5xx, other
failures; the API's and the worker's resident memory (VmRSS) and the outbox's backlog.

At the end (after letting the backlog drain, at most --drain-seconds) the invariants, each
printed `ok` or `FAILED` with what broke; the exit status is 1 when one broke:
  1. every risk item of the soak's package has exactly one emission, SUCCESS, and the sandbox
     issued exactly one policy per item;
  2. every item's emission.succeeded reached its partner exactly once (one webhook-id, received
     once, signature verified), and no webhook-id arrived twice;
  3. no answer was a 5xx, and no request failed (in transport, or with an answer other than the
     expected one: a 429 or a 401 is a failure too);
  4. resident memory is flat after warm-up: each process's VmRSS at the end (the median of the
     last three samples) is at most --rss-growth-mb above its VmRSS when warm-up ended (the
     median of the three samples around it). Warm-up: the first 2 minutes, or a third of a
     shorter run. A process that keeps a few caches grows a little and stops; one that grows
     with traffic grows without end, and an hour shows it.

The rates are the operations' per second at --rate 1 (about 17 requests/s, 3 new items/s): a
modest load that leaves a shared machine to others. Tests plant faults the invariants must catch:
--plant lost-item (an item inserted with its triggers off, so no emission is ever queued) and
--plant leak (the API process imports a module that holds on to a megabyte every 200 ms).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import itertools
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.lib import rss_mb
from tests.conftest import free_port, wait_http  # the same helpers as the tests

PY = sys.executable
PG = os.environ.get("BENCH_PG", "postgres@127.0.0.1:5432")
PACKAGE = "soak-travel"
HOLDERS = 200          # holder e-mails the partners' items go to (each logs in at most every few minutes)
OPS_EMAIL, OPS_PASSWORD = "soak-ops@insurance.invalid", "soak password 0123456789"
WEBHOOK_KEY = "soak-webhooks-" + "x" * 40

# Operations per second at --rate 1.
RATES = {
    "partner authorize": 0.1,
    "partner create item": 3.0,
    "partner list": 3.0,
    "partner read item": 3.0,
    "holder login": 0.2,
    "holder list": 6.0,
    "backoffice page": 0.5,
    "trpc byRiskItem": 1.0,
}

LEAK = """import threading, time
_kept = []
def _leak():
    while True:
        _kept.append(bytearray(1 << 20))
        time.sleep(0.2)
threading.Thread(target=_leak, daemon=True).start()
"""


def log(message: str) -> None:
    print(f"[soak] {message}", file=sys.stderr, flush=True)


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@dataclass
class Tally:
    """What one operation did in one reporting period, and over the whole run."""
    latencies: list[float] = field(default_factory=list)
    server_errors: int = 0
    failures: int = 0     # transport errors and answers other than the expected ones (not 5xx)
    skipped: int = 0      # ticks with --in-flight requests of the operation still running
    examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.latencies += other.latencies
        self.server_errors += other.server_errors
        self.failures += other.failures
        self.skipped += other.skipped
        self.examples = (self.examples + other.examples)[:5]


class Soak:
    def __init__(self, args: argparse.Namespace, api: str, sandbox: str, conn: psycopg.Connection,
                 keys: list[str], pids: dict[str, int]) -> None:
        self.args, self.api, self.sandbox, self.conn, self.keys, self.pids = args, api, sandbox, conn, keys, pids
        self.period: dict[str, Tally] = collections.defaultdict(Tally)
        self.total: dict[str, Tally] = collections.defaultdict(Tally)
        self.in_flight: collections.Counter[str] = collections.Counter()
        self.tokens: list[str | None] = [None] * len(keys)
        self.created: list[tuple[int, str]] = []     # (channel index, item uid) the partners made
        self.holders_with_items: set[str] = set()
        self.last_login: dict[str, float] = {}
        self.holder_tokens: collections.deque[str] = collections.deque(maxlen=50)
        self.item_ids: list[int] = []
        self.cookie = ""
        self.counter = itertools.count(1)
        self.run = secrets.token_hex(3)
        self.rss: dict[str, list[tuple[float, float]]] = {name: [] for name in pids}

    # -- one request, timed and judged --------------------------------------------------------
    async def call(self, op: str, client: httpx.AsyncClient, method: str, url: str, ok: tuple[int, ...] = (200,),
                   **kwargs) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            answer = await client.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            tally = self.period[op]
            tally.failures += 1
            tally.examples.append(f"{method} {url.split('?')[0]}: {type(exc).__name__}")
            return None
        tally = self.period[op]
        tally.latencies.append(time.perf_counter() - started)
        if answer.status_code >= 500:
            tally.server_errors += 1
            tally.examples.append(f"{method} {url.split('?')[0]}: {answer.status_code} {answer.text[:120]}")
        elif answer.status_code not in ok:
            tally.failures += 1
            tally.examples.append(f"{method} {url.split('?')[0]}: {answer.status_code} {answer.text[:120]}")
        return answer

    # -- the operations -------------------------------------------------------------------------
    async def authorize(self, client: httpx.AsyncClient, index: int | None = None) -> None:
        index = next(self.counter) % len(self.keys) if index is None else index
        answer = await self.call("partner authorize", client, "GET", f"{self.api}/api/gateway/v1/auth/authorize",
                                 headers={"x-api-key": self.keys[index]})
        if answer is not None and answer.status_code == 200:
            self.tokens[index] = answer.json()["data"]["access_token"]

    def partner(self) -> tuple[int, dict[str, str]]:
        index = next(self.counter) % len(self.keys)
        return index, {"Authorization": f"Bearer {self.tokens[index]}"}

    async def create_item(self, client: httpx.AsyncClient) -> None:
        index, headers = self.partner()
        n = next(self.counter)
        email = f"holder{n % HOLDERS}.{self.run}@example.com"
        uid = f"SOAK-{self.run}-{n}"
        answer = await self.call("partner create item", client, "POST", f"{self.api}/api/gateway/v1/risk-items",
                                 ok=(200, 201), headers=headers, json={
                                     "package_uid": PACKAGE, "policy_uid": uid, "variant": "travel",
                                     "insured_subject": {"name": "Ada Lovelace", "email": email},
                                     "beneficiaries": [{"name": "Ada Lovelace", "email": email, "isHolder": True,
                                                        "share": 100}]})
        if answer is not None and answer.status_code in (200, 201):
            self.created.append((index, answer.json()["data"]["uid"]))
            self.holders_with_items.add(email)

    async def list_items(self, client: httpx.AsyncClient) -> None:
        _, headers = self.partner()
        await self.call("partner list", client, "GET", f"{self.api}/api/gateway/v1/risk-items?limit=10",
                        headers=headers)

    async def read_item(self, client: httpx.AsyncClient) -> None:
        if not self.created:
            return
        index, uid = self.created[-1 - next(self.counter) % min(len(self.created), 500)]
        await self.call("partner read item", client, "GET", f"{self.api}/api/gateway/v1/risk-items/{uid}",
                        headers={"Authorization": f"Bearer {self.tokens[index]}"})

    async def holder_login(self, client: httpx.AsyncClient) -> None:
        """A code requested, read from the sandbox's mail catcher, verified: one login."""
        if not self.holders_with_items:
            return
        # One code a minute per e-mail (OTP_COOLDOWN): the holder whose last login is oldest.
        now = time.monotonic()
        email = min(self.holders_with_items, key=lambda e: self.last_login.get(e, -1e9))
        if now - self.last_login.get(email, -1e9) < 70:
            return
        self.last_login[email] = now
        seen = (await client.get(f"{self.sandbox}/_sandbox/mail", params={"to": email})).json()["total"]
        asked = await self.call("holder login", client, "POST", f"{self.api}/api/postsales/v1/auth/otp/request",
                                json={"email": email})
        if asked is None or asked.status_code != 200:
            return
        code = None
        for _ in range(100):  # the mail goes out in the background
            mail = (await client.get(f"{self.sandbox}/_sandbox/mail", params={"to": email})).json()
            if mail["total"] > seen:
                code = re.search(r"\b[0-9]{6}\b", mail["messages"][-1]["text"])
                break
            await asyncio.sleep(0.05)
        if code is None:
            self.period["holder login"].failures += 1
            self.period["holder login"].examples.append(f"no code mailed to {email}")
            return
        verified = await self.call("holder login", client, "POST", f"{self.api}/api/postsales/v1/auth/otp/verify",
                                   json={"email": email, "otp": code.group(0)})
        if verified is not None and verified.status_code == 200:
            self.holder_tokens.append(verified.json()["data"]["access_token"])

    async def holder_list(self, client: httpx.AsyncClient) -> None:
        if not self.holder_tokens:
            return
        token = self.holder_tokens[next(self.counter) % len(self.holder_tokens)]
        await self.call("holder list", client, "GET", f"{self.api}/api/postsales/v1/me/risk-items",
                        headers={"Authorization": f"Bearer {token}"})

    async def backoffice_login(self, client: httpx.AsyncClient) -> None:
        answer = await self.call("backoffice page", client, "POST", f"{self.api}/api/auth/login",
                                 json={"email": OPS_EMAIL, "password": OPS_PASSWORD})
        if answer is not None and answer.status_code == 200:
            self.cookie = f"dashboard_session={answer.cookies['dashboard_session']}"

    def some_item_id(self) -> int | None:
        if not self.item_ids or next(self.counter) % 20 == 0:
            self.item_ids = [r[0] for r in self.conn.execute(
                "SELECT r.id FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id "
                "WHERE p.uid = %s ORDER BY r.id DESC LIMIT 200", (PACKAGE,))]
        return self.item_ids[next(self.counter) % len(self.item_ids)] if self.item_ids else None

    async def backoffice_page(self, client: httpx.AsyncClient) -> None:
        if not self.cookie:
            await self.backoffice_login(client)
            return
        item = self.some_item_id()
        pages = ["/backoffice/emissions", "/backoffice/outbox", "/backoffice/packages",
                 f"/backoffice/search?q=SOAK-{self.run}-{next(self.counter) % 1000}"]
        if item is not None:
            pages.append(f"/backoffice/risk-items/{item}")
        page = pages[next(self.counter) % len(pages)]
        # A search that names one policy answers 303 to its item's page; any other redirect is to the login.
        answer = await self.call("backoffice page", client, "GET", self.api + page, headers={"Cookie": self.cookie},
                                 ok=(200, 303) if "/search" in page else (200,))
        if answer is not None and (answer.status_code == 401 or (
                answer.status_code in (302, 303) and "/login" in answer.headers.get("location", ""))):
            self.cookie = ""  # the session ended: log in again at the next tick

    async def trpc_by_item(self, client: httpx.AsyncClient) -> None:
        item = self.some_item_id()
        if not self.cookie or item is None:
            return
        query = quote(json.dumps({"riskItemId": item}), safe="")
        await self.call("trpc byRiskItem", client, "GET",
                        f"{self.api}/api/trpc/integrationEmissions.byRiskItem?input={query}",
                        headers={"Cookie": self.cookie})

    # -- the schedule -------------------------------------------------------------------------
    async def steady(self, op: str, action, rate: float, client: httpx.AsyncClient, until: float) -> None:
        """`action` every 1/rate seconds until `until`, never more than --in-flight at once."""
        interval, due = 1 / rate, time.monotonic() + secrets.randbelow(1000) / 1000 / rate
        running: set[asyncio.Task] = set()
        while due < until:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            due += interval
            if self.in_flight[op] >= self.args.in_flight:
                self.period[op].skipped += 1
                continue
            self.in_flight[op] += 1
            task = asyncio.create_task(action(client))
            running.add(task)
            task.add_done_callback(lambda t, op=op: (running.discard(t), self.in_flight.subtract([op])))
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    def backlog(self) -> int:
        return self.conn.execute("SELECT count(*) FROM outbox.http_requests WHERE delivered_at IS NULL "
                                 "AND dead_at IS NULL").fetchone()[0]

    def sample_rss(self, at: float) -> None:
        for name, pid in self.pids.items():
            self.rss[name].append((at, rss_mb(pid)))

    def report(self, at: float, started: float) -> None:
        minute = (at - started) / 60
        print(f"-- {minute:5.1f} min: " + ", ".join(f"{name} RSS {self.rss[name][-1][1]:.1f} MB" for name in self.pids)
              + f", outbox backlog {self.backlog()}", flush=True)
        span = self.args.report_seconds
        for op in RATES:
            tally = self.period.pop(op, Tally())
            self.total[op].add(tally)
            print(f"   {op:<22} {len(tally.latencies):>6} req {len(tally.latencies) / span:>7.1f}/s "
                  f"p99 {1000 * p99(tally.latencies):>8.1f} ms  5xx {tally.server_errors:>3}  "
                  f"failed {tally.failures:>3}  skipped {tally.skipped:>3}"
                  + (f"  e.g. {tally.examples[0]}" if tally.examples else ""), flush=True)

    async def monitor(self, started: float, until: float) -> None:
        next_report = started + self.args.report_seconds
        while time.monotonic() < until:
            await asyncio.sleep(min(self.args.rss_sample_seconds, max(0.0, until - time.monotonic())))
            now = time.monotonic()
            self.sample_rss(now)
            if now >= next_report - 0.01:
                self.report(now, started)
                next_report += self.args.report_seconds

    async def load(self, seconds: float) -> None:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            for index in range(len(self.keys)):
                await self.authorize(client, index)
            await self.backoffice_login(client)
            started = time.monotonic()
            until = started + seconds
            self.sample_rss(started)
            actions = {"partner authorize": self.authorize, "partner create item": self.create_item,
                       "partner list": self.list_items, "partner read item": self.read_item,
                       "holder login": self.holder_login, "holder list": self.holder_list,
                       "backoffice page": self.backoffice_page, "trpc byRiskItem": self.trpc_by_item}
            jobs = [self.steady(op, actions[op], RATES[op] * self.args.rate, client, until) for op in RATES]
            if "lost-item" in self.args.plant:
                jobs.append(self.plant_lost_item(started + seconds / 2))
            await asyncio.gather(self.monitor(started, until), *jobs)
            if self.period:
                self.report(time.monotonic(), started)

    async def plant_lost_item(self, at: float) -> None:
        """An item whose insert queues nothing (triggers off for its transaction): lost."""
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        with self.conn.transaction():
            self.conn.execute("SET LOCAL session_replication_role = replica")
            self.conn.execute("""INSERT INTO insurance.risk_items (package_id, policy_uid, variant)
                                 SELECT id, %s, 'travel' FROM insurance.packages WHERE uid = %s""",
                              (f"SOAK-{self.run}-planted", PACKAGE))
        log("planted: an item that nothing will emit")

    # -- the end --------------------------------------------------------------------------------
    def drain(self) -> None:
        """Wait (at most --drain-seconds) for every item's emission and every webhook."""
        deadline = time.monotonic() + self.args.drain_seconds
        while time.monotonic() < deadline:
            pending = self.conn.execute(
                """SELECT (SELECT count(*) FROM outbox.http_requests WHERE delivered_at IS NULL AND dead_at IS NULL)
                        + (SELECT count(*) FROM insurance.integration_emissions WHERE status <> 'SUCCESS')""").fetchone()[0]
            if pending == 0:
                return
            time.sleep(0.5)
        log(f"the backlog did not drain in {self.args.drain_seconds} s")

    def invariants(self) -> list[tuple[str, bool, str]]:
        checks: list[tuple[str, bool, str]] = []
        # 1. Items: one emission each, SUCCESS; one policy each at the insurer.
        items, bad, examples = self.conn.execute(
            """WITH per_item AS (
                 SELECT r.id, r.policy_uid, count(e.id) AS emissions,
                        coalesce(bool_and(e.status = 'SUCCESS'), false) AS succeeded
                   FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
                   LEFT JOIN insurance.integration_emissions e ON e.risk_item_id = r.id
                  WHERE p.uid = %s GROUP BY r.id, r.policy_uid)
               SELECT count(*), count(*) FILTER (WHERE emissions <> 1 OR NOT succeeded),
                      (array_agg(policy_uid || ': ' || emissions || ' emission(s)' ORDER BY id)
                         FILTER (WHERE emissions <> 1 OR NOT succeeded))[1:3]
                 FROM per_item""", (PACKAGE,)).fetchone()
        issued = httpx.get(f"{self.sandbox}/_sandbox/stats").json()["policies"].get("PROVIDER_A", 0)
        checks.append(("every item issued once and SUCCESS", bad == 0 and issued == items,
                       (f"{items} items ({len(self.created)} made by partners), {bad} without exactly one SUCCESS "
                        f"emission{': ' + '; '.join(examples) if examples else ''}; the insurer issued {issued} policies")))
        # 2. Webhooks: each item's emission.succeeded received once, verified; no id twice.
        received = httpx.get(f"{self.sandbox}/_sandbox/webhooks", timeout=120).json()["webhooks"]
        by_id = collections.Counter(r["headers"]["webhook-id"] for r in received)
        twice = [i for i, n in by_id.items() if n > 1]
        succeeded = collections.Counter(
            (r["body"] or {}).get("data", {}).get("riskItemId") for r in received
            if (r["body"] or {}).get("type") == "emission.succeeded" and r.get("status") == 204)
        unverified = sum(1 for r in received if r["verified"] is not True)
        with_channel = {r[0] for r in self.conn.execute(
            """SELECT r.id FROM insurance.risk_items r JOIN insurance.packages p ON p.id = r.package_id
                WHERE p.uid = %s AND r.channel_id IS NOT NULL""", (PACKAGE,))}
        missing = sorted(with_channel - set(succeeded))
        extra = sorted(i for i, n in succeeded.items() if n > 1)
        capped = len(received) >= 50_000
        checks.append(("every webhook delivered once per event",
                       not (twice or missing or extra or unverified or capped),
                       f"{len(received)} deliveries received for {len(with_channel)} items; {len(missing)} items never "
                       f"heard of{' (e.g. ' + str(missing[:3]) + ')' if missing else ''}, {len(extra)} heard twice, "
                       f"{len(twice)} webhook-ids twice, {unverified} unverified"
                       + ("; the receiver's record is full (50,000): lower --rate" if capped else "")))
        # 3. No 5xx, no transport failure.
        server_errors = sum(t.server_errors for t in self.total.values())
        failures = {op: t.failures for op, t in self.total.items() if t.failures}
        examples = [e for t in self.total.values() for e in t.examples][:3]
        checks.append(("no 5xx, no request failed", server_errors == 0 and not failures,
                       f"{server_errors} answers 5xx, other failures {failures or 'none'}"
                       + (f"; e.g. {examples}" if examples else "")))
        # 4. Memory flat after warm-up.
        for name, samples in self.rss.items():
            warm = self.warmed_up_at
            around = sorted(samples, key=lambda s: abs(s[0] - warm))[:3]
            start_mb = statistics.median(mb for _, mb in around)
            end_mb = statistics.median(mb for _, mb in samples[-3:])
            checks.append((f"{name} RSS flat after warm-up", end_mb - start_mb <= self.args.rss_growth_mb,
                           (f"{start_mb:.1f} MB when warm-up ended, {end_mb:.1f} MB at the end "
                            f"({end_mb - start_mb:+.1f} MB; at most +{self.args.rss_growth_mb:g})")))
        return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seconds", type=float, help="the run's length in seconds (instead of --minutes)")
    parser.add_argument("--rate", type=float, default=1.0, help="every operation's rate times this")
    parser.add_argument("--channels", type=int, default=4, help="partner channels, each with its webhook endpoint")
    parser.add_argument("--in-flight", type=int, default=16, help="requests of one operation at once, at most")
    parser.add_argument("--report-seconds", type=float, default=60)
    parser.add_argument("--rss-sample-seconds", type=float, default=10)
    parser.add_argument("--rss-growth-mb", type=float, default=8,
                        help="the most a process's VmRSS may grow between the end of warm-up and the end")
    parser.add_argument("--drain-seconds", type=float, default=120)
    parser.add_argument("--plant", action="append", default=[], choices=["lost-item", "leak"],
                        help="a fault the invariants must catch (tests)")
    args = parser.parse_args(argv)
    # `kill PID` ends the run as an interrupt does: processes stopped, database dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seconds = args.seconds if args.seconds else 60 * args.minutes
    warm_up = min(120.0, seconds / 3)
    if args.seconds:  # a short run reports and samples more often
        args.report_seconds = min(args.report_seconds, max(2.0, seconds / 4))
        args.rss_sample_seconds = min(args.rss_sample_seconds, max(0.5, seconds / 20))

    db = f"insurance_soak_{os.getpid()}"
    admin_url = f"postgresql://{PG}/{db}"
    subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c", f'CREATE DATABASE "{db}"'], check=True)
    procs: list[subprocess.Popen] = []
    leak_dir = tempfile.TemporaryDirectory(prefix="soak-leak-")
    try:
        subprocess.run(["sqitch", "--chdir", str(ROOT), "deploy", f"db:pg://{PG}/{db}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "SQITCH_FULLNAME": "soak", "SQITCH_EMAIL": "soak@insurance.invalid"})
        sandbox_port, api_port, smtp_port = free_port(), free_port(), free_port()
        sandbox, api = f"http://127.0.0.1:{sandbox_port}", f"http://127.0.0.1:{api_port}"
        env = {**os.environ, "APP_ENV": "test", "LOG_LEVEL": "warning", "PORT": str(api_port),
               "DATABASE_URL": f"postgresql://insurance_app@{PG.split('@', 1)[1]}/{db}", "ADMIN_DATABASE_URL": admin_url,
               "PUBLIC_BASE_URL": api, "SERVICE_ROLE_SECRET": "soak-" + "x" * 40, "WEBHOOK_SECRET_KEY": WEBHOOK_KEY,
               "SANDBOX_SMTP_PORT": str(smtp_port),
               # Every holder logs in from this one address: the per-address hourly cap is not under test.
               "POSTSALES_OTP_IP_PER_HOUR": "0", "POSTSALES_VERIFY_IP_PER_HOUR": "0"}

        def start(*cmd: str, extra: dict[str, str] | None = None) -> subprocess.Popen:
            proc = subprocess.Popen([PY, "-m", "app", *cmd], env={**env, **(extra or {})}, cwd=ROOT,
                                    stdout=subprocess.DEVNULL)
            procs.append(proc)
            return proc

        start("sandbox", "--port", str(sandbox_port))
        wait_http(f"{sandbox}/_sandbox/health")
        subprocess.run([PY, "-m", "app", "sandbox", "configure", sandbox], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        conn = psycopg.connect(admin_url, autocommit=True)
        keys = seed(conn, sandbox, args.channels)
        api_extra = {}
        if "leak" in args.plant:
            Path(leak_dir.name, "sitecustomize.py").write_text(LEAK)
            api_extra["PYTHONPATH"] = os.pathsep.join(filter(None, [leak_dir.name, env.get("PYTHONPATH")]))
        api_proc = start("serve", "--port", str(api_port), extra=api_extra)
        wait_http(f"{api}/healthz")
        worker = start("worker")
        soak = Soak(args, api, sandbox, conn, keys, {"API": api_proc.pid, "worker": worker.pid})
        soak.warmed_up_at = time.monotonic() + warm_up
        log(f"{seconds:.0f} s at rate x{args.rate:g} ({sum(RATES.values()) * args.rate:.0f} requests/s), warm-up "
            f"{warm_up:.0f} s, database {db}")
        started = time.monotonic()
        asyncio.run(soak.load(seconds))
        soak.warmed_up_at = started + warm_up
        soak.drain()
        print("\ntotals:")
        for op in RATES:
            tally = soak.total[op]
            print(f"   {op:<22} {len(tally.latencies):>7} req {len(tally.latencies) / seconds:>7.1f}/s "
                  f"p99 {1000 * p99(tally.latencies):>8.1f} ms  5xx {tally.server_errors}  failed {tally.failures}  "
                  f"skipped {tally.skipped}")
        print("invariants:")
        broken = 0
        for what, held, detail in soak.invariants():
            broken += not held
            print(f"   {'ok    ' if held else 'FAILED'}  {what}: {detail}", flush=True)
        print("soak: every invariant held" if not broken else f"soak: {broken} invariant(s) broken", flush=True)
        return 1 if broken else 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        leak_dir.cleanup()
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f"SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '{db}'"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        subprocess.run(["psql", "-X", "-q", f"postgresql://{PG}/postgres", "-c",
                        f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], stdout=subprocess.DEVNULL, check=False)


def seed(conn: psycopg.Connection, sandbox: str, channels: int) -> list[str]:
    """The package (sold through PROVIDER_A), the partner channels (each with a webhook endpoint
    on the sandbox's receiver, told the channel's secret), a back-office user; the API keys."""
    from app.dashboard.passwords import PASSWORD_HASHER
    from app.webhooks import derive_secret
    package = conn.execute("""INSERT INTO insurance.packages (uid, name, sales_integration_slug)
                              VALUES (%s, 'Soak travel', 'PROVIDER_A') RETURNING id""", (PACKAGE,)).fetchone()[0]
    conn.execute("INSERT INTO insurance.package_variants (package_id, code, name) VALUES (%s, 'travel', 'Travel')",
                 (package,))
    keys = []
    for i in range(channels):
        key = f"ik_soak-{i}-{secrets.token_hex(8)}"
        hook = f"{sandbox}/_sandbox/webhooks/soak-{i}"
        made = conn.execute("SELECT admin.create_channel('soak', %s, '{v1,integrations/v2}', %s, '{}', %s::jsonb, %s)",
                            (f"soak-{i}", hashlib.sha256(key.encode()).digest(), json.dumps({"webhooks": [hook]}),
                             [PACKAGE])).fetchone()[0]
        if not isinstance(made, dict) or not made.get("id"):
            raise SystemExit(f"the soak's channel was refused: {made}")
        salt = secrets.token_bytes(32)
        conn.execute("SELECT admin.set_webhook_secret('soak', %s, %s)", (made["id"], salt))
        httpx.put(hook, json={"secret": derive_secret(WEBHOOK_KEY, salt)}).raise_for_status()
        keys.append(key)
    conn.execute("INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (%s, %s)",
                 (OPS_EMAIL, PASSWORD_HASHER.hash(OPS_PASSWORD)))
    return keys


if __name__ == "__main__":
    sys.exit(main())
