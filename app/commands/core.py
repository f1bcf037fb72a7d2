"""`serve` and `migrate`."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from urllib.parse import urlsplit, urlunsplit

from app.cli import admin_connection, config_or_exit, fail
from app.config import ROOT


def sqitch_target(database_url: str) -> str:
    """postgresql://user@host:port/db -> db:pg://user@host:port/db (sqitch's URI)."""
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgres", "postgresql"):
        fail(f"not a PostgreSQL URL: {parts.scheme}://...", code=2)
    return "db:pg:" + database_url.split(":", 1)[1]


def one_host(database_url: str) -> str:
    """The URL of the host libpq picks among several (`h1:p1,h2:p2/db?target_session_attrs=
    read-write`: the primary), for sqitch, whose URI names one host. A URL of one host as it is."""
    parts = urlsplit(database_url)
    if "," not in parts.netloc:
        return database_url
    import psycopg
    try:
        with psycopg.connect(database_url, connect_timeout=10) as conn:
            host, port = conn.info.host, conn.info.port
    except psycopg.OperationalError as exc:
        fail(f"cannot connect to the database: {str(exc).splitlines()[0]}")
    user = parts.netloc.rpartition("@")[0]
    query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("target_session_attrs="))
    return urlunsplit((parts.scheme, f"{user + '@' if user else ''}{host}:{port}", parts.path, query, ""))


def migrate(args) -> int:
    config = config_or_exit()
    if not shutil.which("sqitch"):
        fail("sqitch is not installed (make setup installs it)")
    command = ["sqitch", "--chdir", str(ROOT), args.action,
               sqitch_target(one_host(config.admin_database_url))]
    if args.action == "deploy":
        command.insert(4, "--verify")
    elif args.action == "revert":
        command.insert(4, "-y")
        if args.to:
            command += ["--to", args.to]
    # psql's NOTICEs ("relation ... already exists, skipping", "role ... is already a member")
    # come from statements that are idempotent on purpose, and read as errors on a brand-new
    # database: the deploy reports warnings and errors only.
    options = " ".join(filter(None, (os.environ.get("PGOPTIONS"), "-c client_min_messages=warning")))
    code = subprocess.call(command, env={**os.environ, "PGOPTIONS": options})
    if code == 0 and args.action == "deploy":
        # The retention job reads it from the database at every run.
        with admin_connection(config) as conn:
            conn.execute("SELECT insurance.set_outbox_retention(justify_hours(make_interval(secs => %s)))",
                         (config.outbox_retention,))
            conn.execute("SELECT insurance.set_cron_history_retention(justify_hours(make_interval(secs => %s)))",
                         (config.cron_history_retention,))
            conn.execute("SELECT insurance.set_policy_retention(justify_hours(make_interval(secs => %s)))",
                         (config.policy_retention,))
        print(f"outbox retention: {config.outbox_retention} s (OUTBOX_RETENTION)")
        print(f"pg_cron history retention: {config.cron_history_retention} s (CRON_HISTORY_RETENTION)")
        print(f"policy retention: {config.policy_retention} s (POLICY_RETENTION)")
    return code


def serve(args) -> int:
    import uvicorn

    from app.logging import configure
    config = config_or_exit(require_mode=True)
    host = args.host or config.host
    for problem in (config.mail_problem(), config.listen_problem(host)):
        if problem:
            fail(problem if not config.production else f"production refuses to start: {problem}", code=2)
    configure(config.log_level)
    # Secrets are settled once, here: each of the --workers processes imports app.asgi and
    # reads them from the environment, so a token or OTP issued by one is valid on the others.
    os.environ.update(config.secrets)
    metrics_dir = None
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Set before any worker process imports prometheus-client (app/metrics.py): each keeps
        # its figures in this directory and a scrape adds them up.
        metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="insurance-metrics-")
    try:
        # httptools bounded by app/server.py (request line, headers, time to send them). No
        # proxy-header rewriting by uvicorn: the peer stays the peer, and app/addresses.py
        # reads X-Forwarded-For from FORWARDED_ALLOW_IPS alone, by one rule for every limit.
        uvicorn.run("app.asgi:app", host=host, port=args.port or config.port,
                    workers=args.workers, loop="uvloop", http="app.server:BoundedHttpToolsProtocol",
                    access_log=False, log_level=config.log_level, proxy_headers=False,
                    log_config=None)  # uvicorn's records go through app/logging.py's JSON handler
    finally:
        if metrics_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve the HTTP API with uvicorn")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--workers", type=int, default=1)
    p.set_defaults(func=serve)

    p = subparsers.add_parser("migrate", help="deploy (and verify) the sqitch changes")
    p.add_argument("action", nargs="?", default="deploy", choices=["deploy", "verify", "status", "revert"])
    p.add_argument("--to", help="with revert: the change to revert to")
    p.set_defaults(func=migrate)



