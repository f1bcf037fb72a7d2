"""Upgrades: the newest release deployed from its own files, filled, then HEAD deployed over it.

FROM is the newest tag of sqitch.plan whose plan differs from HEAD's (so that, with HEAD
tagged too, the upgrade is still tested from the release before), read from git
(tests/release.py: its git tag, or the commit that added it to the plan). Its files are
exported with `git archive` and deployed with `sqitch deploy --verify` into a database of the
test's own; the data goes in through that release's own public paths: its command line
(`python -m app packages|channels|users|sandbox configure`) and its own API and worker
processes (`serve`, `worker`, run from the exported files), so that the rows are what that
release writes, whatever HEAD's app would write. Then HEAD's plan is deployed over it.

When HEAD's plan adds nothing to the newest release, that release is still upgraded: its app
rolled to HEAD's over its data. `UPGRADE_FROM_REF=<git ref>` upgrades from that commit instead
(its plan must be a prefix of HEAD's): for trying a plan before it is tagged. Without any
release tag in the plan, the tests skip.
Run by scripts/test.sh (`make test`) as their own step (marker `upgrade`).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from psycopg.rows import dict_row

from scripts import sql_schema
from tests.conftest import ROOT, child_environ, free_port, running, wait_for
from tests.release import Repo, parse_plan, plan_tags

pytestmark = pytest.mark.upgrade

PGHOST = os.environ.get("PGHOST", "127.0.0.1")
PGPORT = os.environ.get("PGPORT", "5432")
SQITCH_ENV = {"SQITCH_FULLNAME": os.environ.get("SQITCH_FULLNAME", "Upgrade Test"),
              "SQITCH_EMAIL": os.environ.get("SQITCH_EMAIL", "upgrade@insurance.invalid")}
# Tables whose rows a deploy between two releases rewrites on purpose: name -> why (the
# CHANGELOG entry of that release says so too). Every other row must come through unchanged.
REWRITTEN_BY_UPGRADE: dict[str, str] = {}


@dataclass(frozen=True)
class Release:
    label: str       # v0.9.0, or the UPGRADE_FROM_REF
    commit: str
    revert_to: str   # what `sqitch revert --to` takes back to it: @v0.9.0


def release_to_upgrade_from() -> Release:
    repo = Repo(ROOT)
    head_plan = (ROOT / "sqitch.plan").read_text()
    if ref := os.environ.get("UPGRADE_FROM_REF"):
        commit = repo.git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()
        entries = parse_plan(repo.show(commit, "sqitch.plan").decode())
        last = entries[-1]
        found = Release(f"{ref} (UPGRADE_FROM_REF)", commit, f"@{last.name}" if last.is_tag else last.name)
    else:
        tags = plan_tags(parse_plan(head_plan))
        if not tags:
            pytest.skip("no release to upgrade from: sqitch.plan has no tag "
                        "(CONTRIBUTING.md 'Releasing'; UPGRADE_FROM_REF=<commit> tries one)")
        releases = []
        for tag in reversed(tags):
            commit = repo.tag_commit(tag)
            if commit is None:
                pytest.fail(f"release {tag} of sqitch.plan resolves to no commit (no git tag, no commit whose "
                            "plan has it): fetch the history")
            releases.append(Release(tag, commit, f"@{tag}"))
        # The newest release whose plan HEAD continues with more; when HEAD adds no SQL to the
        # newest one, that one still: its app rolled to HEAD's over its data is an upgrade too.
        found = next((r for r in releases if repo.show(r.commit, "sqitch.plan").decode() != head_plan),
                     releases[0])
    # sqitch knows a change by a hash of its plan line and its parent's: HEAD's plan must repeat
    # the release's lines as they were, and only add after them.
    released = _plan_lines(repo.show(found.commit, "sqitch.plan").decode())
    if _plan_lines(head_plan)[:len(released)] != released:
        pytest.fail(f"no upgrade path from {found.label}: HEAD's sqitch.plan does not start with that release's "
                    "plan (a change before the tag was edited, moved or removed; after a tag only new changes "
                    "and reworks: CONTRIBUTING.md 'Releasing')")
    return found


def plan_adds(found: Release) -> bool:
    """Whether HEAD's plan has changes after the release's (new ones or reworks)."""
    def changes(text: str) -> int:
        return sum(not e.is_tag for e in parse_plan(text))
    return changes((ROOT / "sqitch.plan").read_text()) > changes(Repo(ROOT).show(found.commit, "sqitch.plan").decode())


def _plan_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.startswith(("%", "#"))]


class ScratchDatabase:
    """A database of the test's own on the shared cluster, dropped at the end."""

    def __init__(self, purpose: str) -> None:
        self.name = f"insurance_{purpose}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.admin_url = f"postgresql://postgres@{PGHOST}:{PGPORT}/{self.name}"
        self.app_url = f"postgresql://insurance_app@{PGHOST}:{PGPORT}/{self.name}"
        self.target = f"db:pg://postgres@{PGHOST}:{PGPORT}/{self.name}"
        with self._server() as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')

    @staticmethod
    def _server(database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(f"postgresql://postgres@{PGHOST}:{PGPORT}/{database}", autocommit=True)

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.admin_url, autocommit=True, row_factory=dict_row)

    def sqitch(self, top: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """`sqitch <args> <this database>` with the plan and scripts under `top`."""
        done = subprocess.run(["sqitch", *args, self.target], cwd=top, capture_output=True, text=True,
                              env={**os.environ, **SQITCH_ENV}, timeout=600)
        self.unschedule()
        if check and done.returncode != 0:
            raise AssertionError(f"sqitch {' '.join(args)} ({top}) exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def unschedule(self) -> None:
        # The deploy registers pg_cron jobs (in cron.database_name); their minute sweep would
        # retry emissions in the middle of the test, and a dropped database's jobs fail forever.
        with contextlib.suppress(psycopg.Error), self._server(os.environ.get("CRON_DATABASE", "postgres")) as conn:
            conn.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE database = %s", (self.name,))

    def drop(self) -> None:
        self.unschedule()
        with self._server() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture
def release(tmp_path) -> tuple[Release, Path]:
    """The release to upgrade from and its files (the whole tree, as `git archive` gives it)."""
    found = release_to_upgrade_from()
    code = tmp_path / "release"
    Repo(ROOT).export(found.commit, code)
    return found, code


@pytest.fixture
def scratch_db() -> Iterator[ScratchDatabase]:
    db = ScratchDatabase("upgrade")
    try:
        yield db
    finally:
        db.drop()


class Stack:
    """The provider sandbox with its SMTP catcher (HEAD's, a test peer, running throughout) and
    the processes of one version of the app: its command line, API and worker."""

    def __init__(self, db: ScratchDatabase, sandbox: str, smtp_port: int, **settings: str) -> None:
        self.db = db
        self.sandbox = sandbox
        self.api_port = free_port()
        self.api = f"http://127.0.0.1:{self.api_port}"
        self.env = child_environ(
            DATABASE_URL=db.app_url, ADMIN_DATABASE_URL=db.admin_url, PORT=str(self.api_port),
            PUBLIC_BASE_URL=self.api, CHAT_WEBHOOK_URL=f"{sandbox}/chat/webhook",
            SMTP_URL=f"smtp://127.0.0.1:{smtp_port}", WORKER_POLL_INTERVAL="0.2", LOG_LEVEL="warning",
            # FAILED stays FAILED for the test (its retry is an hour away); a webhook that cannot
            # be delivered is dead after two attempts a second apart.
            INTEGRATION_MAX_ATTEMPTS="3", INTEGRATION_RETRY_BASE_SECONDS="3600",
            OUTBOX_MAX_ATTEMPTS="2", WEBHOOK_RETRY_BASE_SECONDS="1", WEBHOOK_RETRY_CAP_SECONDS="1",
            **settings)

    def cli(self, code: Path, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run([sys.executable, "-m", "app", *args], cwd=code, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"python -m app {' '.join(args)} ({code}): {done.stderr}"
        return done.stdout

    def serve(self, code: Path):
        return running(["serve", "--port", str(self.api_port)], self.env, f"{self.api}/healthz", cwd=code)

    def worker(self, code: Path):
        return running(["worker"], self.env, cwd=code)

    def fault(self, **fault: Any) -> None:
        httpx.post(f"{self.sandbox}/_sandbox/faults", json=fault).raise_for_status()

    def issued_per_key(self, provider: str = "PROVIDER_A") -> dict[str, int]:
        """Policies the sandbox issued (201) per Idempotency-Key."""
        counts: dict[str, int] = {}
        for r in httpx.get(f"{self.sandbox}/_sandbox/requests",
                           params={"provider": provider, "limit": 100000}).json()["requests"]:
            if r["status"] == 201:
                counts[r["idempotencyKey"]] = counts.get(r["idempotencyKey"], 0) + 1
        return counts

    def code_for(self, email: str, after: int = 0) -> str:
        """The one-time code of the newest mail to `email` beyond the first `after`."""
        def mailed():
            messages = httpx.get(f"{self.sandbox}/_sandbox/mail", params={"to": email}).json()["messages"]
            return len(messages) > after and messages[-1]
        return re.search(r"\b(\d{6})\b", wait_for(mailed, 30, f"the code's mail to {email}")["text"]).group(1)


@contextlib.contextmanager
def sandbox_running() -> Iterator[tuple[str, int]]:
    port, smtp_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    with running(["sandbox", "--port", str(port)], child_environ(SANDBOX_SMTP_PORT=str(smtp_port)),
                 f"{url}/_sandbox/health"):
        yield url, smtp_port


def ok(resp: httpx.Response) -> Any:
    assert resp.status_code < 300, f"{resp.request.method} {resp.request.url}: {resp.status_code} {resp.text}"
    return resp.json()["data"] if resp.content else None


@dataclass
class Partner:
    name: str
    api_key: str
    package: str
    branch: str = "v1"
    items: list[dict] = field(default_factory=list)

    def token(self, api: str) -> str:
        return ok(httpx.get(f"{api}/api/gateway/{self.branch}/auth/authorize",
                            headers={"x-api-key": self.api_key}))["access_token"]

    def create_item(self, api: str, holder: str, other: str | None = None) -> dict:
        policy = f"UPG-{uuid.uuid4().hex[:10]}"
        beneficiaries = [{"name": "Ada Lovelace", "email": holder, "isHolder": True, "share": 60 if other else 100}]
        if other:
            beneficiaries.append({"name": "Charles Babbage", "email": other, "isHolder": False, "share": 40})
        item = ok(httpx.post(f"{api}/api/gateway/{self.branch}/risk-items",
                             headers={"Authorization": f"Bearer {self.token(api)}"},
                             json={"package_uid": self.package, "policy_uid": policy, "variant": "travel",
                                   "insured_subject": {"name": "Ada Lovelace", "email": holder},
                                   "beneficiaries": beneficiaries}))
        self.items.append(item)
        return item

    def list_items(self, api: str) -> list[dict]:
        return ok(httpx.get(f"{api}/api/gateway/{self.branch}/risk-items", params={"from": 0, "to": 99},
                            headers={"Authorization": f"Bearer {self.token(api)}"}))["items"]


def holder_login(stack: Stack, email: str) -> str:
    """A holder's JWT: a code asked for through the API, read from the mail the SMTP catcher got."""
    before = len(httpx.get(f"{stack.sandbox}/_sandbox/mail", params={"to": email}).json()["messages"])
    ok(httpx.post(f"{stack.api}/api/postsales/v1/auth/otp/request", json={"email": email}))
    code = stack.code_for(email, before)
    return ok(httpx.post(f"{stack.api}/api/postsales/v1/auth/otp/verify",
                         json={"email": email, "otp": code}))["access_token"]


def holder_items(api: str, token: str) -> list[dict]:
    return ok(httpx.get(f"{api}/api/postsales/v1/me/risk-items", headers={"Authorization": f"Bearer {token}"}))


def emission_status(db: ScratchDatabase, item_uid: str) -> str | None:
    with db.connect() as conn:
        row = conn.execute("""SELECT e.status FROM insurance.integration_emissions e
                                JOIN insurance.risk_items r ON r.id = e.risk_item_id
                               WHERE r.uid = %s AND e.event = 'SALES_DISPATCH'""", (item_uid,)).fetchone()
    return row and row["status"]


def snapshot(db: ScratchDatabase) -> dict[str, list[dict]]:
    """Every row of every table of the application (not sqitch's registry), as JSON objects."""
    with db.connect() as conn:
        tables = [r["name"] for r in conn.execute(
            """SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'sqitch')
                  AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1""")]
        return {t: [r["row"] for r in conn.execute(f"SELECT to_jsonb(t) AS row FROM {t} t")] for t in tables}


def rows_changed(before: dict[str, list[dict]], after: dict[str, list[dict]]) -> dict[str, str]:
    """What became of the rows of `before`: {table: what is wrong}. A column the upgrade added is
    not compared; a table or column it removed is reported."""
    problems = {}
    for table, rows in before.items():
        if table in REWRITTEN_BY_UPGRADE:
            continue
        if table not in after:
            problems[table] = "table gone"
            continue
        columns = set().union(*rows) if rows else set()
        kept = after[table]
        missing = columns - (set().union(*kept) if kept else columns)
        if missing:
            problems[table] = f"columns gone: {sorted(missing)}"
            continue
        old = sorted(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in rows)
        new = sorted(orjson.dumps({k: r.get(k) for k in columns}, option=orjson.OPT_SORT_KEYS) for r in kept)
        if old != new:
            lost = [r for r in old if r not in new][:2]
            problems[table] = f"{len(old)} rows before, {len(new)} after; e.g. before: {lost}"
    return problems


def counts(snap: dict[str, list[dict]]) -> dict[str, int]:
    return {t: len(rows) for t, rows in snap.items()}


@dataclass
class Filled:
    partner: Partner       # its webhook reaches the sandbox's receiver
    lost_partner: Partner  # its webhook points at a closed port: dead letters
    holder: str
    holder_token: str
    session_cookie: dict[str, str]
    items: dict[str, dict]  # state -> an item whose sales emission is in it ("PENDING": not yet sent)
    seen: list[tuple]       # the partner's items as the release's API listed them (item_view)


def fill(stack: Stack, code: Path) -> Filled:
    """What production holds, written by the release at `code` through its public paths."""
    run = uuid.uuid4().hex[:8]
    package = f"upgrade-{run}"
    stack.cli(code, "sandbox", "configure", stack.sandbox)
    stack.cli(code, "packages", "create", "--uid", package, "--name", "Upgrade travel",
              "--variant", "travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500",
              "--sales-integration", "PROVIDER_A")

    def channel(name: str, hook: str) -> Partner:
        made = orjson.loads(stack.cli(code, "channels", "create", "--name", name, "--branch", "v1", "--branch", "integrations/v2",
                                      "--package", package,
                                      "--integration-payload", orjson.dumps({"webhooks": [hook]}).decode()))
        if hook.startswith(stack.sandbox):
            httpx.put(hook, json={"secret": made["webhookSecret"]}).raise_for_status()
        return Partner(name, made["apiKey"], package)

    partner = channel(f"Upgrade partner {run}", f"{stack.sandbox}/_sandbox/webhooks/upgrade-{run}")
    lost = channel(f"Lost partner {run}", f"http://127.0.0.1:{free_port()}/hooks")
    user = f"ops-{run}@example.com"
    stack.cli(code, "users", "create", "--email", user, stdin="correct horse battery staple")
    holder, other = f"ada-{run}@example.com", f"charles-{run}@example.com"
    items: dict[str, dict] = {}
    with stack.serve(code):
        with stack.worker(code):
            stack.fault(provider="PROVIDER_A", count=1, status=400)
            items["ABANDONED"] = partner.create_item(stack.api, holder)
            wait_for(lambda: emission_status(stack.db, items["ABANDONED"]["uid"]) == "ABANDONED", timeout=60, what="ABANDONED")
            stack.fault(provider="PROVIDER_A", count=1, status=503)
            items["FAILED"] = partner.create_item(stack.api, holder, other)
            wait_for(lambda: emission_status(stack.db, items["FAILED"]["uid"]) == "FAILED", timeout=60, what="FAILED")
            items["SUCCESS"] = partner.create_item(stack.api, holder, other)
            lost_item = lost.create_item(stack.api, holder)
            for item in (items["SUCCESS"], lost_item):
                wait_for(lambda uid=item["uid"]: emission_status(stack.db, uid) == "SUCCESS", timeout=60, what="SUCCESS")
            wait_for(lambda: dead_letters(stack.db) >= 1, timeout=60, what="a dead webhook delivery")
            wait_for(lambda: httpx.get(f"{stack.sandbox}/_sandbox/webhooks",
                                       params={"name": f"upgrade-{run}"}).json()["total"] >= 3,
                     timeout=60, what="the partner's webhooks")
            holder_token = holder_login(stack, holder)
            assert {i["uid"] for i in holder_items(stack.api, holder_token)} >= {i["uid"] for i in partner.items}
            login = httpx.post(f"{stack.api}/api/auth/login", json={"email": user, "password": "correct horse battery staple"})
            ok(login)
            cookies = dict(login.cookies)
            ok(httpx.post(f"{stack.api}/api/postsales/v1/auth/otp/request", json={"email": other}))  # an OTP left
        # The worker stopped: this item's sales dispatch stays in the outbox.
        items["PENDING"] = partner.create_item(stack.api, holder)
        seen = sorted(item_view(i) for i in partner.list_items(stack.api))
    return Filled(partner, lost, holder, holder_token, cookies, items, seen)


def dead_letters(db: ScratchDatabase) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) AS n FROM outbox.http_requests WHERE dead_at IS NOT NULL").fetchone()["n"]


def item_view(item: dict) -> tuple:
    """What a partner sees of an item that must not change across an upgrade."""
    return (item["uid"], item["policy_uid"], item["variant"], item["insured_subject"],
            sorted((b["name"], b["email"], b["share"]) for b in item["beneficiaries"]),
            (item.get("metadata") or {}).get("integration", {}).get("state"))


def schema_picture(db: ScratchDatabase) -> dict[str, str]:
    """The schema as `make schema` pictures it (scripts/sql_schema.py)."""
    return sql_schema.render(sql_schema.dump(db.admin_url))


def test_an_upgrade_from_the_newest_release_keeps_every_row_and_the_app_works_on_it(release, scratch_db, capsys):
    (found, code), db = release, scratch_db
    db.sqitch(code, "deploy", "--verify")
    released_schema = schema_picture(db)
    with sandbox_running() as (sandbox, smtp_port):
        stack = Stack(db, sandbox, smtp_port)
        filled = fill(stack, code)
        with db.connect() as conn:
            states = {r["status"] for r in conn.execute("SELECT status FROM insurance.integration_emissions")}
            outbox = conn.execute("""SELECT count(*) FILTER (WHERE dead_at IS NOT NULL) AS dead,
                                            count(*) FILTER (WHERE delivered_at IS NULL AND dead_at IS NULL) AS pending
                                       FROM outbox.http_requests""").fetchone()
        assert states == {"SUCCESS", "FAILED", "ABANDONED"}, states
        assert outbox["dead"] >= 1 and outbox["pending"] >= 2, outbox
        before = snapshot(db)
        for table in ("insurance.risk_items", "insurance.beneficiaries", "insurance.channels",
                      "insurance.dashboard_users", "insurance.dashboard_sessions", "insurance.postsales_otp",
                      "outbox.http_requests", "webhooks.secrets", "insurance.integration_emissions"):
            assert before[table], f"{table}: the fill wrote no row"

        started = time.monotonic()
        deployed = db.sqitch(ROOT, "deploy", "--verify")
        took = time.monotonic() - started
        with capsys.disabled():
            print(f"\nupgrade {found.label} -> HEAD with data: {sum(counts(before).values())} rows in "
                  f"{len(before)} tables, deployed in {took:.1f} s:\n{deployed.stdout.rstrip()}")
        db.sqitch(ROOT, "verify")
        assert rows_changed(before, snapshot(db)) == {}

        with stack.serve(ROOT), stack.worker(ROOT):
            ready = httpx.get(f"{stack.api}/readyz")
            assert ready.status_code == 200, ready.text
            # What was there answers as before ...
            assert sorted(item_view(i) for i in filled.partner.list_items(stack.api)) == filled.seen
            assert {i["uid"] for i in holder_items(stack.api, filled.holder_token)} \
                   == {i["uid"] for i in filled.partner.items + filled.lost_partner.items}
            page = httpx.get(f"{stack.api}/backoffice/search", cookies=filled.session_cookie,
                             params={"q": filled.items["SUCCESS"]["policy_uid"]}, follow_redirects=True)
            assert page.status_code == 200 and page.url.path.startswith("/backoffice/risk-items/"), page.url
            # ... what was waiting is sent, a new item is issued, a holder logs in with a new code.
            wait_for(lambda: emission_status(db, filled.items["PENDING"]["uid"]) == "SUCCESS",
                     timeout=60, what="the pending dispatch of the release, sent by HEAD's worker")
            newcomer = f"grace-{uuid.uuid4().hex[:8]}@example.com"  # a code per minute and address
            new = filled.partner.create_item(stack.api, newcomer, filled.holder)
            wait_for(lambda: emission_status(db, new["uid"]) == "SUCCESS", timeout=60, what="a new item's emission")
            token = holder_login(stack, newcomer)
            assert [i["uid"] for i in holder_items(stack.api, token)] == [new["uid"]]
            assert emission_status(db, filled.items["FAILED"]["uid"]) == "FAILED"
            assert emission_status(db, filled.items["ABANDONED"]["uid"]) == "ABANDONED"
        issued = stack.issued_per_key()
        assert set(issued.values()) == {1}, f"a policy issued twice: {issued}"
        assert len(issued) == len([i for i in (filled.partner.items + filled.lost_partner.items)
                                   if emission_status(db, i["uid"]) == "SUCCESS"])

    settled = counts(snapshot(db))
    db.sqitch(ROOT, "revert", "-y", "--to", found.revert_to)
    status = db.sqitch(ROOT, "status", check=False).stdout
    assert found.revert_to in status, status  # back at the release ...
    assert ("Undeployed change" if plan_adds(found) else "Nothing to deploy") in status, status  # ... HEAD's after it
    reverted = counts(snapshot(db))
    assert {t: n for t, n in reverted.items() if settled.get(t) != n} == {}, "rows lost by the revert"
    # The reverts put back exactly what the release deployed (a rework's revert runs its released script).
    back = schema_picture(db)
    assert back == released_schema, f"the revert to {found.revert_to} left another schema:\n" \
                                     f"{sql_schema.diff(released_schema, back)}"
    db.sqitch(ROOT, "deploy", "--verify")
    # Every row of the release's tables is there again; a table that HEAD added (a per-minute
    # tally, a pause) went with its change's revert and comes back as its deploy makes it.
    again = counts(snapshot(db))
    assert {t: n for t, n in again.items() if t in reverted} == {t: settled[t] for t in reverted}


# Under live traffic: the release's API and worker serve while HEAD's plan is deployed, then
# the app is rolled to HEAD's code (the order of docs/operations.md "Upgrading").

@dataclass
class Answer:
    at: float
    status: int
    correct: bool
    retry_after: str | None
    body: str


class Loop(threading.Thread):
    """One client calling `call(client, api)` again and again until stopped; `call` answers
    (response, whether its body is the right one). `api()` is the current API's base URL."""

    def __init__(self, name: str, api: Callable[[], str], call: Callable[[httpx.Client, str], tuple]) -> None:
        super().__init__(name=name, daemon=True)
        self.api, self.call = api, call
        self.answers: list[Answer] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stopping.is_set():
                try:
                    resp, correct = self.call(client, self.api())
                except httpx.TransportError as exc:  # no answer at all counts as a wrong one
                    self.answers.append(Answer(time.monotonic(), 0, False, None, repr(exc)))
                    continue
                self.answers.append(Answer(time.monotonic(), resp.status_code, correct,
                                           resp.headers.get("retry-after"), resp.text[:300]))
                time.sleep(0.02)

    def wrong(self) -> list[Answer]:
        """Answers neither right nor a retryable 503 with Retry-After."""
        return [a for a in self.answers if not a.correct and not (a.status == 503 and a.retry_after)]

    def longest_pause(self) -> float:
        """The longest time between two right answers."""
        times = [a.at for a in self.answers if a.correct]
        return max((b - a for a, b in itertools.pairwise(times)), default=float("inf"))


def test_an_upgrade_under_live_traffic_loses_nothing_and_answers_no_500(release, scratch_db, capsys):
    (found, code), db = release, scratch_db
    db.sqitch(code, "deploy", "--verify")
    with sandbox_running() as (sandbox, smtp_port):
        stack = Stack(db, sandbox, smtp_port)
        run = uuid.uuid4().hex[:8]
        package = f"live-{run}"
        stack.cli(code, "sandbox", "configure", sandbox)
        stack.cli(code, "packages", "create", "--uid", package, "--name", "Live travel",
                  "--variant", "travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500",
                  "--sales-integration", "PROVIDER_A")
        made = orjson.loads(stack.cli(code, "channels", "create", "--name", f"Live partner {run}", "--branch", "v1",
                                      "--package", package))
        partner = Partner("live", made["apiKey"], package)
        holder = f"live-{run}@example.com"
        # Every provider call takes a while, so that the worker is still draining during the deploy.
        stack.fault(provider="PROVIDER_A", count=1000, delay=0.2)
        current = {"api": stack.api}
        with stack.serve(code) as old_api, stack.worker(code) as old_worker:
            held = [partner.create_item(stack.api, holder)["uid"] for _ in range(3)]
            gateway_token, holder_token = partner.token(stack.api), holder_login(stack, holder)
            created: list[str] = []

            def partner_read(client: httpx.Client, api: str) -> tuple:
                resp = client.get(f"{api}/api/gateway/v1/risk-items", params={"from": 0, "to": 2},
                                  headers={"Authorization": f"Bearer {gateway_token}"})
                return resp, resp.status_code == 200 and [i["uid"] for i in resp.json()["data"]["items"]] == held

            def holder_read(client: httpx.Client, api: str) -> tuple:
                resp = client.get(f"{api}/api/postsales/v1/me/risk-items",
                                  headers={"Authorization": f"Bearer {holder_token}"})
                return resp, resp.status_code == 200 and {i["uid"] for i in resp.json()["data"]} >= set(held)

            def partner_write(client: httpx.Client, api: str) -> tuple:
                resp = client.post(f"{api}/api/gateway/v1/risk-items", headers={"Authorization": f"Bearer {gateway_token}"},
                                   json={"package_uid": package, "policy_uid": f"LIVE-{uuid.uuid4().hex[:10]}",
                                         "variant": "travel", "insured_subject": {"name": "Ada Lovelace"},
                                         "beneficiaries": [{"name": "Ada Lovelace", "email": holder,
                                                            "isHolder": True, "share": 100}]})
                if resp.status_code == 201:
                    created.append(resp.json()["data"]["uid"])
                time.sleep(0.2)
                return resp, resp.status_code == 201

            # HEAD's API starts before its migrations, as a rolling deploy starts it: not ready
            # (/readyz 503) while its plan has changes the database lacks, so it gets no traffic.
            new = Stack(db, sandbox, smtp_port)
            with new.serve(ROOT):
                ready_before = httpx.get(f"{new.api}/readyz").status_code
                loops = [Loop(name, lambda: current["api"], call) for name, call in
                         (("partner reads", partner_read), ("holder reads", holder_read),
                          ("partner writes", partner_write))]
                for loop in loops:
                    loop.start()
                time.sleep(2)
                started = time.monotonic()
                attempts = []
                for _ in range(3):  # a deploy that timed out on its lock left nothing behind: run it again
                    attempts.append(db.sqitch(ROOT, "deploy", "--verify", check=False))
                    if attempts[-1].returncode == 0:
                        break
                deployed = time.monotonic() - started
                assert attempts[-1].returncode == 0, attempts[-1].stdout + attempts[-1].stderr
                assert ready_before == (503 if plan_adds(found) else 200)
                assert httpx.get(f"{new.api}/readyz").status_code == 200
                time.sleep(1)
                # Roll the app: HEAD's API takes the traffic and its worker starts; the release's stop.
                with new.worker(ROOT):
                    current["api"] = new.api
                    time.sleep(0.5)
                    old_worker.terminate()
                    old_api.terminate()
                    old_worker.wait(30)
                    old_api.wait(30)
                    time.sleep(2)
                    for loop in loops:
                        loop.stopping.set()
                    for loop in loops:
                        loop.join(60)
                    wait_for(lambda: all(emission_status(db, uid) == "SUCCESS" for uid in held + created),
                             timeout=120, what="every acknowledged item's emission SUCCESS")
        issued = stack.issued_per_key()
        httpx.delete(f"{sandbox}/_sandbox/faults")

    report = [f"upgrade {found.label} -> HEAD under traffic: deploy {deployed:.1f} s in {len(attempts)} run(s), "
              f"{len(held) + len(created)} emissions"]
    for loop in loops:
        retried = sum(1 for a in loop.answers if a.status == 503)
        report.append(f"  {loop.name}: {len(loop.answers)} answers, {retried} x 503 Retry-After, "
                      f"{len(loop.wrong())} wrong, longest pause {loop.longest_pause():.2f} s")
    with capsys.disabled():
        print("\n" + "\n".join(report))
    for loop in loops:
        assert loop.wrong() == [], f"{loop.name}: answers neither right nor a retryable 503"
        assert sum(a.correct for a in loop.answers) >= 10, f"{loop.name}: too few right answers to tell"
    keys = {f"{uid}:PROVIDER_A:SALES_DISPATCH" for uid in held + created}
    assert {k: n for k, n in issued.items() if k in keys} == {k: 1 for k in keys}, "lost or issued twice"
    assert set(issued) == keys, "a policy issued that no partner was told of"


# A large table: HEAD deployed over the release while partners write, with a million risk items.
LARGE_RISK_ITEMS = int(os.environ.get("UPGRADE_LARGE_RISK_ITEMS", "1000000"))
# The longest a partner's write may wait while HEAD deploys (CONTRIBUTING, "SQL": an index on a
# table that grows is built CONCURRENTLY; a lock that stops its writers says why).
LONGEST_WRITE_PAUSE = 2.0


def test_an_upgrade_over_a_million_risk_items_pauses_partner_writes_briefly(release, scratch_db, capsys):
    (found, code), db = release, scratch_db
    db.sqitch(code, "deploy", "--verify")
    with sandbox_running() as (sandbox, smtp_port):
        stack = Stack(db, sandbox, smtp_port)
        run = uuid.uuid4().hex[:8]
        package = f"large-{run}"
        stack.cli(code, "packages", "create", "--uid", package, "--name", "Large travel",
                  "--variant", "travel:Travel Basic:12.50:EUR:MEDICAL=30000,LUGGAGE=1500",
                  "--sales-integration", "PROVIDER_A")
        made = orjson.loads(stack.cli(code, "channels", "create", "--name", f"Large partner {run}", "--branch", "v1",
                                      "--package", package))
        partner = Partner("large", made["apiKey"], package)
        started = time.monotonic()
        with db.connect() as conn:
            # The bulk rows belong to no channel and have no beneficiaries: no trigger of the
            # release has anything to keep for them (channel counts, holders' documents, the
            # dispatch a partner's item queues), so the triggers are off for the one INSERT.
            # The indexes that no constraint needs are built once after the rows, as the release
            # defines them, rather than grown row by row (the same indexes, in a third of the time).
            indexes = [r["def"] for r in conn.execute(
                """SELECT pg_get_indexdef(x.indexrelid) AS def FROM pg_index x
                    WHERE x.indrelid = 'insurance.risk_items'::regclass
                      AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = x.indexrelid)""")]
            with conn.transaction():
                for r in conn.execute("""SELECT x.indexrelid::regclass::text AS name FROM pg_index x
                                          WHERE x.indrelid = 'insurance.risk_items'::regclass
                                            AND NOT EXISTS (SELECT FROM pg_constraint k
                                                             WHERE k.conindid = x.indexrelid)""").fetchall():
                    conn.execute(f"DROP INDEX {r['name']}")
                conn.execute("SET LOCAL session_replication_role = replica")
                conn.execute("""INSERT INTO insurance.risk_items (package_id, policy_uid, variant, insured_subject)
                                SELECT p.id, 'BULK-' || i, 'travel', jsonb_build_object('name', 'Bulk ' || i)
                                  FROM insurance.packages p, generate_series(1, %s) i
                                 WHERE p.uid = %s""", (LARGE_RISK_ITEMS, package))
                conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
                for definition in indexes:
                    conn.execute(definition)
            conn.execute("VACUUM ANALYZE insurance.risk_items")
            rows = conn.execute("SELECT count(*) AS n FROM insurance.risk_items").fetchone()["n"]
        filled = time.monotonic() - started
        assert rows >= LARGE_RISK_ITEMS

        with stack.serve(code):
            token = partner.token(stack.api)

            def partner_write(client: httpx.Client, api: str) -> tuple:
                resp = client.post(f"{api}/api/gateway/v1/risk-items", headers={"Authorization": f"Bearer {token}"},
                                   json={"package_uid": package, "policy_uid": f"LARGE-{uuid.uuid4().hex[:10]}",
                                         "variant": "travel", "insured_subject": {"name": "Ada Lovelace"},
                                         "beneficiaries": [{"name": "Ada Lovelace", "email": f"large-{run}@example.com",
                                                            "isHolder": True, "share": 100}]})
                return resp, resp.status_code == 201

            writes = Loop("partner writes", lambda: stack.api, partner_write)
            writes.start()
            time.sleep(2)
            deploy_started = time.monotonic()
            deployed = db.sqitch(ROOT, "deploy", "--verify")
            deploy_ended = time.monotonic()
            time.sleep(1)
            writes.stopping.set()
            writes.join(60)

    # The longest wait for a right answer that overlaps the deploy: between two right answers
    # (or from the deploy's start to the first one in it).
    times = [a.at for a in writes.answers if a.correct]
    during = [t for t in times if deploy_started <= t] or [float("inf")]
    before = [t for t in times if t < deploy_started]
    edges = ([before[-1]] if before else [deploy_started]) + during
    pause = max(b - a for a, b in pairwise(edges)) if len(edges) > 1 else float("inf")
    baseline = max((b - a for a, b in pairwise(before)), default=0.0)
    with capsys.disabled():
        print(f"\nupgrade {found.label} -> HEAD over {rows} risk items (filled in {filled:.1f} s): deploy "
              f"{deploy_ended - deploy_started:.1f} s; partner writes: {len(writes.answers)} answers, "
              f"{len(writes.wrong())} wrong, longest pause during the deploy {pause:.2f} s "
              f"(before it {baseline:.2f} s)\n{deployed.stdout.rstrip()}")
    assert writes.wrong() == [], "partner writes answered neither 201 nor a retryable 503"
    assert during[0] < deploy_ended + 1.5, "no partner write succeeded during or right after the deploy"
    assert pause <= LONGEST_WRITE_PAUSE, (f"partner writes waited {pause:.2f} s while HEAD deployed over "
                                          f"{rows} risk items (at most {LONGEST_WRITE_PAUSE} s)")
