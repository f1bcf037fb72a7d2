"""Configuration: a class with development defaults that the environment overrides.

Each setting is declared once, as a field of `Config` made by `setting()`: its variable, its
default as the environment writes it, how it is read and one line of doc. `from_env` reads the
fields, and `python -m app settings` writes docs/configuration.md's table and .env.example
from them (tests/unit/test_settings.py keeps both current). Nothing is read at import
time; `Config.from_env()` is called by `create_app` and the command line. In production (`APP_ENV=production`) a missing or short secret stops start-up,
and the message names every one. In development the secrets the environment does not set come
from one git-ignored file (`DEV_ENV_FILE`, default `.env.development`, mode 0600), written by
the first process that needs it: `make run`, its API, its worker and any `python -m app
worker` or `serve` started by hand beside it then sign and verify with the same secrets.
"""
from __future__ import annotations

import collections
import dataclasses
import ipaddress
import math
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.addresses import parse_trusted

ROOT = Path(__file__).resolve().parent.parent

MIN_SECRET_BYTES = 32
# Production's floor of a secret's estimated entropy (secret_bits).
MIN_SECRET_BITS = 128
DEV_ENV_FILE = ROOT / ".env.development"

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


# The holder web app's usual development addresses (a dev server on port 3000): allowed by
# default under APP_ENV=development only, never in test or production.
DEVELOPMENT_HOLDER_ORIGINS = "http://localhost:3000,http://127.0.0.1:3000"


class ConfigError(ValueError):
    """A configuration value is missing or malformed; start-up must stop."""


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines (blank lines and # comments skipped) of an env file."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip()
    return found


def development_secrets(path: Path) -> dict[str, str]:
    """The development secrets of `path`, written once (mode 0600) by whichever process comes
    first; O_EXCL makes two processes starting at once agree on one file. An existing file
    that others may read (group or world permissions) is refused, never used or rewritten."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if not path.is_file():  # a device, a pipe, a folder: never read into, never replaced
            raise ConfigError(f"DEV_ENV_FILE={str(path)!r} is not a regular file") from None
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(f"DEV_ENV_FILE={str(path)!r} holds secrets but is open to others (mode "
                              f"{mode:04o}): `chmod 600 {path}` if only you could have read it, else "
                              "delete it and a new one is written") from None
        found = read_env_file(path)
        if all(found.get(name) for name in SECRET_NAMES):
            return found
        fd = None  # an older file without some names: add them (still this machine's only)
    values = {name: secrets.token_urlsafe(48) for name in SECRET_NAMES}
    if fd is None:
        values.update({k: v for k, v in read_env_file(path).items() if v})
        # A new file of our own (mkstemp: O_EXCL, mode 0600, an unguessable name), then renamed
        # over the old one: never written through a name someone else could have placed.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
        _write_secrets(fd, values)
        os.replace(tmp, path)
    else:
        _write_secrets(fd, values)
    return values


def _write_secrets(fd: int, values: dict[str, str]) -> None:
    with os.fdopen(fd, "w") as out:
        out.write("# Development secrets, generated once by python -m app (see .env.example).\n"
                  "# Every development process reads them; never use them in production.\n")
        out.writelines(f"{name}={value}\n" for name, value in values.items())


def secret_bits(value: str) -> float:
    """A secret's estimated entropy in bits: its length times the Shannon entropy of its own
    characters' frequencies. A floor against the obviously weak (32 x `a` scores 0, `abab...`
    32), not a proof of randomness: 64 characters of `secrets.token_urlsafe(48)` score about 350,
    `openssl rand -hex 32` about 250."""
    counts = collections.Counter(value)
    return -sum(n * math.log2(n / len(value)) for n in counts.values()) if value else 0.0


def secret_problems(env: dict[str, str]) -> list[str]:
    """'NAME is missing' / 'NAME is shorter than 32 bytes' / 'NAME is too predictable' / 'A and B
    are equal', for every secret production needs: a secret shared by two purposes lets a token of
    one pass as the other."""
    problems = []
    for name in SECRET_NAMES:
        value = env.get(name, "")
        if len(value.encode()) < MIN_SECRET_BYTES:
            problems.append(f"{name} is {'missing' if not value else f'shorter than {MIN_SECRET_BYTES} bytes'}")
        elif secret_bits(value) < MIN_SECRET_BITS:
            problems.append(f"{name} is too predictable (about {secret_bits(value):.0f} bits by its characters' "
                            f"frequencies, at least {MIN_SECRET_BITS} needed: draw it at random)")
    holders: dict[str, list[str]] = {}
    for name in SECRET_NAMES:
        if len(env.get(name, "").encode()) >= MIN_SECRET_BYTES:
            holders.setdefault(env[name], []).append(name)
    problems += [f"{' and '.join(names)} are equal (each secret must be different)"
                 for names in holders.values() if len(names) > 1]
    return problems


# ------------------------------------------------------------------ kinds of value
# A kind reads one variable's text into the value the app uses, or raises ConfigError.

def parse_duration(name: str, value: str) -> int:
    """'15m', '1h', '24h', '7d' -> seconds."""
    match = _DURATION.match(value.strip())
    if not match or int(match.group(1)) == 0:
        raise ConfigError(f"{name}={value!r} is not a duration such as 15m, 1h, 24h or 7d")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def text(name: str, raw: str) -> str:
    return raw


def lower(name: str, raw: str) -> str:
    return raw.strip().lower()


def url(name: str, raw: str) -> str:
    return raw.strip().rstrip("/")


def integer(minimum: int = 0) -> Callable[[str, str], int]:
    def read(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not an integer") from None
        if value < minimum:
            raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
        return value
    read.__doc__ = f"an integer, at least {minimum}"
    return read


def number(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def seconds(name: str, raw: str) -> float:
    value = number(name, raw)
    if not 0 < value < 86400:
        raise ConfigError(f"{name}={raw!r} must be a number of seconds above 0")
    return value


def flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", ""):
        raise ConfigError(f"{name}={raw!r} must be true or false")
    return value in ("true", "1", "yes")


# READ_MAX_LAG beyond this is no freshness bound at all: a channel revoked on the primary would
# keep reading on the standby for that long.
MAX_READ_LAG_SECONDS = 60


def read_lag(name: str, raw: str) -> float:
    value = number(name, raw)
    if not 0 < value <= MAX_READ_LAG_SECONDS:
        raise ConfigError(f"{name}={raw!r} must be a number of seconds above 0 and at most {MAX_READ_LAG_SECONDS}")
    return value


def is_loopback(host: str) -> bool:
    """Whether a host name or address stays on this machine (127.0.0.0/8, ::1, localhost)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origins(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated origins as a browser sends them in `Origin`: no trailing slash, scheme
    and host in lower case (`https://App.example.com/` matches `https://app.example.com`)."""
    return tuple(dict.fromkeys(o.strip().rstrip("/").lower() for o in raw.split(",") if o.strip()))


def networks(name: str, raw: str) -> tuple:
    try:
        return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a list of addresses or networks") from None


def proxies(name: str, raw: str) -> str:
    try:
        parse_trusted(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a list of addresses or networks "
                          "(the proxies in front of the API)") from None
    return raw.strip()


def listen_url(name: str, raw: str) -> str:
    return "" if raw.strip().lower() == "none" else raw.strip()


def mode(name: str, raw: str) -> str:
    if raw not in MODES:
        raise ConfigError(f"{name}={raw!r} must be development, test or production")
    return raw


def path(name: str, raw: str) -> Path:
    return Path(raw)


def choice(*allowed: str) -> Callable[[str, str], str]:
    def read(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ConfigError(f"{name}={raw!r} must be one of {', '.join(allowed)}")
        return value
    return read


def stanza(name: str, raw: str) -> str:
    # pgBackRest's stanza: a name it keeps as a folder of the repository.
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", raw.strip()):
        raise ConfigError(f"{name}={raw!r} is not a stanza name (letters, digits, - and _)")
    return raw.strip()


MODES = ("development", "test", "production")


# ------------------------------------------------------------------ the declaration

@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: its variable, its default as the environment writes it, how it is read, one
    line of doc, and its group in the documents."""
    name: str
    default: str
    doc: str
    kind: Callable[[str, str], Any]
    group: str
    # A default computed at start-up from the settings before it, and how the documents show it.
    derive: Callable[[dict[str, Any]], str] | None = None
    shown: str | None = None
    empty_is_value: bool = False  # VAR= means "none" rather than "the default"


def setting(name: str, default: str, doc: str, kind: Callable[[str, str], Any] = text, *,
            group: str, derive: Callable[[dict[str, Any]], str] | None = None, shown: str | None = None,
            empty_is_value: bool = False) -> Any:
    """A field of Config that the environment variable `name` sets."""
    declared = Setting(name, default, doc, kind, group, derive, shown, empty_is_value)
    return dataclasses.field(default=kind(name, default), metadata={"setting": declared})


# The groups of the documents, in their order.
MODE, DB, HTTP, HOLDERS, PARTNERS, EMISSIONS, WORKER, OPS, BACKUPS = GROUPS = (
    "Mode and secrets", "Database", "HTTP", "Holders (post-sales)", "Partners (gateway and webhooks)",
    "Emissions and providers", "Worker", "Operations", "Backups (pgBackRest)")


def secret(name: str, doc: str) -> Setting:
    """A secret's declaration: no default (production refuses to start without it; development
    draws it into DEV_ENV_FILE, test per process)."""
    return Setting(name, "", doc, text, MODE)


# Every secret: declared as the other settings are (its variable and its line in the documents),
# read by from_env into Config.secrets. Production needs each of them, at least 32 bytes and all
# different.
SECRETS = {item.name: item for item in (
    secret("POSTSALES_JWT_SECRET", "signs holder tokens"),
    secret("OTP_HASH_SECRET", "key of the OTP hash"),
    secret("AUTH_SECRET", "gateway `v1` token secret"),
    secret("AUTH_SECRET_V2", "gateway `v2` token secret"),
    secret("AUTH_IA_SECRET", "gateway `ia/v1` token secret"),
    secret("AUTH_IA_SECRET_V2", "gateway `ia/v2` token secret"),
    secret("AUTH_INTEGRATION_SECRET", "gateway `integrations/v1` token secret"),
    secret("AUTH_INTEGRATION_SECRET_V2", "gateway `integrations/v2` token secret"),
    secret("SERVICE_ROLE_SECRET", "service-role bearer of `/api/integrations/*`: the worker signs, the API verifies, "
           "so both hold the same value (outside development a worker without it refuses to start)"),
    secret("WEBHOOK_SECRET_KEY", "partners' webhook secrets derive from it (docs/webhooks.md): the same in the command "
           "line and the worker; changing it changes every partner's secret"),
    secret("DEVICE_TOKEN_SECRET", "signs device tokens: a holder's `device_token` and an operator's `device` cookie "
           "(docs/security.md, Devices); changing it ends every device's exemption"),
)}
SECRET_NAMES = tuple(SECRETS)


# Variables read outside Config's fields, documented with the rest.
PROCESS_SETTINGS = (
    Setting("DEV_ENV_FILE", ".env.development",
            "development only: the shared secrets file (mode 0600, git-ignored) that `make run`, its processes "
            "and any `python -m app worker` or `serve` started beside it read; delete it to draw new secrets. It may "
            "carry any other setting as well (`NAME=value` lines); the environment wins", path, MODE,
            shown="`.env.development` (development only)"),
    Setting("PROMETHEUS_MULTIPROC_DIR", "",
            "where the processes of one `serve --workers N` keep their metrics (set by `serve` itself); set it "
            "only to choose the directory (empty at start)", text, OPS, shown="(set by `serve --workers N`)"),
)



@dataclasses.dataclass(frozen=True)
class Config:
    env: str = setting(
        "APP_ENV", "development",
        "`production`, `development` or `test`; `serve`, `worker` and every command that reads the settings refuse "
        "to start without it. `production` refuses a secret that is missing, shorter than 32 bytes, too "
        "predictable (below 128 bits estimated from its characters' frequencies: draw it at random) or equal to "
        "another, and names every one in one message; `development` reads the secrets the environment does not "
        "set from `DEV_ENV_FILE`; `test` generates ephemeral ones per process and listens on loopback only",
        mode, group=MODE)
    database_url: str = setting(
        "DATABASE_URL", "postgresql://insurance_app@127.0.0.1:5432/insurance",
        "the app's login. Every database URL may name several hosts, "
        "`postgresql://user@h1:5432,h2:5432/db?target_session_attrs=read-write`: the primary is whichever takes "
        "writes, and the pools, the worker's LISTEN and the command line find it again after a failover "
        "(docs/operations.md \"High availability\")", group=DB)
    admin_database_url: str = setting(
        "ADMIN_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/insurance",
        "migrations and the command line", group=DB)
    db_pool_min: int = setting("DB_POOL_MIN", "2", "asyncpg pool size per process, at least", integer(1), group=DB)
    # About twice the database's cores: more connections than that only queue on its CPUs, and
    # the queue shows in the tail (docs/benchmarks.md). Callers wait at app/db.py's gate.
    db_pool_max: int = setting(
        "DB_POOL_MAX", "4",
        "asyncpg pool size per process, at most; callers wait first come, first served. Size the sum over the "
        "processes to about twice the database's cores: more connections only queue on its CPUs, and the queue "
        "shows in the tail (docs/benchmarks.md)", integer(1), group=DB)
    db_statement_cache_size: int = setting(
        "DB_STATEMENT_CACHE_SIZE", "256",
        "asyncpg's prepared-statement cache per connection; `0` through PgBouncer in transaction pooling mode "
        "(1.18 keeps no prepared statements across transactions)", integer(0), group=DB)
    database_listen_url: str = setting(
        "DATABASE_LISTEN_URL", "",
        "the worker's LISTEN connection: a direct one (not through PgBouncer, which would drop the "
        "notifications); `none`: the worker polls every `WORKER_POLL_INTERVAL`", listen_url, group=DB,
        derive=lambda v: v["database_url"], shown="`DATABASE_URL`")
    db_acquire_timeout: float = setting(
        "DB_ACQUIRE_TIMEOUT", "3", "seconds a request waits for a pooled connection before 503 `DATABASE_BUSY`",
        number, group=DB)
    # A standby for the partner's and the holder's reads (app/db.py Replica); "" = all on DATABASE_URL.
    read_database_url: str = setting(
        "READ_DATABASE_URL", "",
        "a standby for the partner gateway's list and get and the holder's reads; a caller's reads stay on the "
        "primary until the standby has replayed that caller's last write through this process "
        "(docs/operations.md \"Reads on a standby\")", group=DB)
    read_max_lag: float = setting(
        "READ_MAX_LAG", "1",
        f"seconds of replay lag beyond which the standby is skipped and the primary reads (above 0, at most "
        f"{MAX_READ_LAG_SECONDS}: how long a change on the primary, a revoked channel, may go unseen there)",
        read_lag, group=DB)
    sqitch_plan: Path = setting("SQITCH_PLAN", str(ROOT / "sqitch.plan"),  # noqa: RUF009 - the declaration; a Path is immutable
                                "the sqitch plan `/readyz` compares the database with", path, group=DB,
                                shown="`sqitch.plan` of the checkout")
    host: str = setting("HOST", "127.0.0.1", "where the API listens", group=HTTP)
    port: int = setting("PORT", "8000", "the API's port", integer(1), group=HTTP)
    public_base_url: str = setting(
        "PUBLIC_BASE_URL", "http://127.0.0.1:8000",
        "where clients and the worker reach the API (outbox rows addressed by path; the OpenAPI documents' "
        "`servers`)", url, group=HTTP, derive=lambda v: f"http://{v['host']}:{v['port']}", shown="`http://HOST:PORT`")
    forwarded_allow_ips: str = setting(
        "FORWARDED_ALLOW_IPS", "127.0.0.1",
        "comma-separated proxy addresses or networks whose `X-Forwarded-For` names the client (the rightmost "
        "entry that is not a proxy; production refuses `*`); every per-IP limit and `/metrics` key on that client "
        "(docs/security.md)", proxies, group=HTTP)
    headers_timeout: float = setting(
        "HEADERS_TIMEOUT", "10",
        "seconds for a request's head to arrive (request line at most 8 KiB: 414; headers at most 16 KiB: 431)",
        seconds, group=HTTP)
    max_body_bytes: int = setting(
        "MAX_BODY_BYTES", "1048576",
        "the largest request body of an authenticated route (413 `PAYLOAD_TOO_LARGE`); anonymous routes (OTP, "
        "dashboard login) take at most 16 KiB", integer(1024), group=HTTP)
    trpc_max_batch: int = setting("TRPC_MAX_BATCH", "10", "calls per tRPC request (more: one 400 for the whole "
                                  "request)", integer(1), group=HTTP)
    log_level: str = setting(
        "LOG_LEVEL", "info",
        "one JSON object per line on stdout, the servers' own lines included; an exception is logged with its "
        "type, message and stack, never with frame locals, tokens, claims or bodies", lower, group=HTTP)
    metrics_allowed_ips: tuple = setting(
        "METRICS_ALLOWED_IPS", "127.0.0.1,::1",
        "addresses or networks (CIDR) that `GET /metrics` and the internal API reference answer; anyone else "
        "gets 403 (outside development)", networks, group=HTTP)
    postsales_jwt_expiration: int = setting("POSTSALES_JWT_EXPIRATION", "1h",
                                            "holder token lifetime (`15m`, `1h`, `24h`, `7d`)",
                                            parse_duration, group=HOLDERS)
    postsales_otp_ttl: int = setting("POSTSALES_OTP_TTL", "10m", "validity of an e-mailed code", parse_duration,
                                     group=HOLDERS)
    postsales_otp_max_attempts: int = setting("POSTSALES_OTP_MAX_ATTEMPTS", "5", "failed verifications per code",
                                              integer(1), group=HOLDERS)
    postsales_otp_ip_per_hour: int = setting(
        "POSTSALES_OTP_IP_PER_HOUR", "20", "OTP requests per client IP and hour (`0`: off), counted in PostgreSQL",
        integer(0), group=HOLDERS)
    postsales_verify_ip_per_hour: int = setting(
        "POSTSALES_VERIFY_IP_PER_HOUR", "50",
        "failed OTP verifications per client IP and hour (`0`: off); reserved before the compare, refunded on "
        "success", integer(0), group=HOLDERS)
    postsales_allowed_origins: tuple[str, ...] = setting(
        "POSTSALES_ALLOWED_ORIGINS", "",
        "comma-separated CORS origins of the holder web app, compared as a browser sends `Origin`; set it empty "
        "to allow none. A refused origin is logged once per process (`cors_origin_refused`)", origins,
        group=HOLDERS, empty_is_value=True,
        derive=lambda v: DEVELOPMENT_HOLDER_ORIGINS if v["env"] == "development" else "",
        shown=f"development: `{DEVELOPMENT_HOLDER_ORIGINS}`; test and production: none")
    smtp_url: str = setting(
        "SMTP_URL", "smtp://127.0.0.1:1025",
        "where OTP mail goes: `smtps://user:password@host[:465]`, or `smtp://host[:port]` (with credentials, "
        "STARTTLS must succeed or nothing is sent). Development and test default to the sandbox's mail catcher; "
        "production refuses to start without it, and with a loopback address unless `SMTP_ALLOW_LOOPBACK`",
        group=HOLDERS, derive=lambda v: f"smtp://127.0.0.1:{v['sandbox_smtp_port'] or 1025}",
        shown="development and test: `smtp://127.0.0.1:SANDBOX_SMTP_PORT`; production: none (required)")
    smtp_allow_loopback: bool = setting(
        "SMTP_ALLOW_LOOPBACK", "false",
        "production only: accept an `SMTP_URL` on this machine (a local relay that sends on with TLS). Off, such "
        "a URL stops start-up: on 127.0.0.1 the sandbox's catcher may be listening, and a code caught there logs "
        "the holder in", flag, group=HOLDERS)
    mail_from: str = setting("MAIL_FROM", "Insurance <no-reply@insurance.invalid>", "sender of OTP mail",
                             group=HOLDERS)
    gateway_jwt_expiration: int = setting("GATEWAY_JWT_EXPIRATION", "1h", "gateway token lifetime",
                                          parse_duration, group=PARTNERS)
    rate_limit_per_minute: int = setting("RATE_LIMIT_PER_MINUTE", "0",
                                         "gateway requests per channel and minute (`0`: off)", integer(0),
                                         group=PARTNERS)
    webhook_timeout: float = setting("WEBHOOK_TIMEOUT", "10", "seconds, the total deadline of one webhook delivery",
                                     seconds, group=PARTNERS)
    webhook_retry_base_seconds: int = setting("WEBHOOK_RETRY_BASE_SECONDS", "10",
                                              "backoff of a failed webhook delivery: first delay", integer(1),
                                              group=PARTNERS)
    webhook_retry_cap_seconds: int = setting("WEBHOOK_RETRY_CAP_SECONDS", "3600",
                                             "backoff of a failed webhook delivery: longest delay", integer(1),
                                             group=PARTNERS)
    webhook_secret_overlap: int = setting("WEBHOOK_SECRET_OVERLAP", "24h",
                                          "both signatures this long after a partner's secret is rotated",
                                          parse_duration, group=PARTNERS)
    webhook_redeliveries_per_minute: int = setting("WEBHOOK_REDELIVERIES_PER_MINUTE", "10",
                                                   "a partner's webhook redeliveries per channel and minute (beyond: 429)",
                                                   integer(1), group=PARTNERS)
    webhook_endpoint_concurrency: int = setting("WEBHOOK_ENDPOINT_CONCURRENCY", "4",
                                                "webhook deliveries in flight per endpoint and worker", integer(1),
                                                group=PARTNERS)
    chat_webhook_url: str = setting("CHAT_WEBHOOK_URL", "", "Slack-compatible webhook for failure notices",
                                    group=EMISSIONS)
    integration_max_attempts: int = setting("INTEGRATION_MAX_ATTEMPTS", "8",
                                            "attempts before an emission is ABANDONED", integer(1), group=EMISSIONS)
    integration_retry_base_seconds: int = setting(
        "INTEGRATION_RETRY_BASE_SECONDS", "60", "exponential backoff with jitter: first delay", integer(1),
        group=EMISSIONS)
    integration_retry_cap_seconds: int = setting(
        "INTEGRATION_RETRY_CAP_SECONDS", "21600",
        "exponential backoff: longest delay; a provider's `Retry-After` is clamped to [0, cap]", integer(1),
        group=EMISSIONS)
    integration_provider_concurrency: int = setting("INTEGRATION_PROVIDER_CONCURRENCY", "16",
                                                    "provider calls in flight per API process", integer(1),
                                                    group=EMISSIONS)
    http_connect_timeout: float = setting("HTTP_CONNECT_TIMEOUT", "5", "seconds to connect, every outbound call",
                                          number, group=EMISSIONS)
    http_read_timeout: float = setting("HTTP_READ_TIMEOUT", "15", "seconds per read, every outbound call",
                                       number, group=EMISSIONS)
    http_total_timeout: float = setting(
        "HTTP_TOTAL_TIMEOUT", "30",
        "seconds for a whole provider call, from the key's claim: waiting for a slot, token refreshes and the "
        "answer; the key's lease is this plus 60 s", seconds, group=EMISSIONS)
    sandbox_port: int = setting("SANDBOX_PORT", "8100", "where `python -m app sandbox` (and `make run`'s sandbox) "
                                "listens", integer(1), group=EMISSIONS)
    sandbox_smtp_port: int = setting("SANDBOX_SMTP_PORT", "1025",
                                     "the sandbox's mail catcher (SMTP); `0`: none. `SMTP_URL`'s default follows it",
                                     integer(0), group=EMISSIONS)
    worker_concurrency: int = setting("WORKER_CONCURRENCY", "64", "outbox rows in flight per worker", integer(1),
                                      group=WORKER)
    worker_dispatch_batch: int = setting("WORKER_DISPATCH_BATCH", "25",
                                         "emission deliveries per request to the API", integer(1), group=WORKER)
    worker_poll_interval: float = setting("WORKER_POLL_INTERVAL", "1",
                                          "seconds between polls without a notification", number, group=WORKER)
    worker_lease_seconds: int = setting("WORKER_LEASE_SECONDS", "60", "lease of a claimed outbox row, in seconds",
                                        integer(1), group=WORKER)
    worker_batch: int = setting("WORKER_BATCH", "100",
                                "outbox rows claimed per round trip (never more than the free slots)", integer(1),
                                group=WORKER)
    worker_grace_seconds: float = setting(
        "WORKER_GRACE_SECONDS", "20",
        "seconds a stopping worker (SIGTERM, SIGINT) lets its deliveries finish; the rest go back to the queue",
        seconds, group=WORKER)
    worker_db_pool_min: int = setting("WORKER_DB_POOL_MIN", "1", "the worker's asyncpg pool size, at least",
                                      integer(1), group=WORKER)
    worker_db_pool_max: int = setting(
        "WORKER_DB_POOL_MAX", "3",
        "the worker's asyncpg pool size, at most: a claim, a record and a webhook secret's read at once; its "
        "LISTEN has a connection of its own", integer(1), group=WORKER)
    worker_metrics_port: int = setting(
        "WORKER_METRICS_PORT", "0",
        "the worker's own `/metrics` port (also `worker --metrics-port`), on `WORKER_METRICS_HOST`; `0`: none",
        integer(0), group=WORKER)
    worker_metrics_host: str = setting("WORKER_METRICS_HOST", "127.0.0.1", "address of the worker's `/metrics`",
                                       group=WORKER)
    outbox_max_attempts: int = setting(
        "OUTBOX_MAX_ATTEMPTS", "20",
        "failed deliveries after which an outbox row is dead (kept, never delivered until `outbox retry`)",
        integer(1), group=WORKER)
    outbox_retention: int = setting(
        "OUTBOX_RETENTION", "7d",
        "how long delivered outbox rows are kept; applied by `python -m app migrate` as the database setting "
        "`insurance.outbox_retention`, read by the retention job", parse_duration, group=WORKER)
    cron_history_retention: int = setting(
        "CRON_HISTORY_RETENTION", "7d",
        "how long pg_cron keeps the history (`cron.job_run_details`) of this project's jobs, at least an hour; "
        "applied by `python -m app migrate`, which registers the hourly job `insurance-cron-history` in the cron "
        "database", parse_duration, group=WORKER)
    policy_retention: int = setting(
        "POLICY_RETENTION", "3650d",
        "how long a policy's contract data (its people included) is kept after the policy ends, at least a day; "
        "then the hourly retention job pseudonymizes it (docs/privacy.md); applied by `python -m app migrate` as "
        "the database setting `insurance.policy_retention`", parse_duration, group=OPS)
    dashboard_session_ttl: int = setting("DASHBOARD_SESSION_TTL", "12h",
                                         "lifetime of a dashboard session (cookie and row)", parse_duration, group=OPS)
    device_token_ttl: int = setting(
        "DEVICE_TOKEN_TTL", "30d",
        "lifetime of a device token (a holder's `device_token`, an operator's `device` cookie; docs/security.md); "
        "each login or verification gives a fresh one", parse_duration, group=OPS)
    dashboard_login_concurrency: int = setting(
        "DASHBOARD_LOGIN_CONCURRENCY", "2",
        "argon2 verifications at once per API process (7 MiB each); more logins wait their turn", integer(1),
        group=OPS)
    dashboard_allowed_origins: tuple[str, ...] = setting(
        "DASHBOARD_ALLOWED_ORIGINS", "",
        "comma-separated origins, besides `PUBLIC_BASE_URL`'s, whose pages may log in and call tRPC mutations",
        origins, group=OPS)
    backup_config: Path = setting(  # noqa: RUF009 - the declaration; a Path is immutable
        "BACKUP_CONFIG", "/etc/pgbackrest/insurance.conf",
        "the pgBackRest configuration that `python -m app backup up` writes (mode 0640, owned by postgres) and "
        "every `backup` command and the cluster's `archive_command` read with `--config`: the repository, "
        "retention, compression, the key and the cluster's paths", path, group=BACKUPS)
    backup_stanza: str = setting("BACKUP_STANZA", "insurance", "pgBackRest's stanza: the name of the cluster's "
                                 "backups and WAL in the repository", stanza, group=BACKUPS)
    backup_repo_path: Path = setting(  # noqa: RUF009 - the declaration; a Path is immutable
        "BACKUP_REPO_PATH", "/var/lib/pgbackrest",
        "the repository (owned by postgres), never inside the data directory; in production on another "
        "machine or an object store (docs/operations.md \"Backups and restore\")", path, group=BACKUPS)
    backup_retention_full: int = setting("BACKUP_RETENTION_FULL", "2",
                                         "full backups kept (with the WAL that restores from them)", integer(1),
                                         group=BACKUPS)
    backup_retention_diff: int = setting("BACKUP_RETENTION_DIFF", "6", "differential backups kept", integer(1),
                                         group=BACKUPS)
    backup_compress_type: str = setting("BACKUP_COMPRESS_TYPE", "zst", "compression of backups and WAL: `zst`, "
                                        "`lz4`, `gz`, `bz2` or `none`",
                                        choice("zst", "lz4", "gz", "bz2", "none"), group=BACKUPS)
    backup_cipher_type: str = setting("BACKUP_CIPHER_TYPE", "aes-256-cbc",
                                      "the repository's encryption (`repo1-cipher-type`): `aes-256-cbc` or `none`",
                                      choice("aes-256-cbc", "none"), group=BACKUPS)
    backup_cipher_pass: str = setting(
        "BACKUP_CIPHER_PASS", "",
        "the repository's key; empty: the first `backup up` draws one and keeps it in `BACKUP_CONFIG` only. "
        "Keep a copy away from the repository: without it no backup can be read", group=BACKUPS,
        shown="(drawn by `backup up`)")
    backup_max_age: int = setting("BACKUP_MAX_AGE", "26h",
                                  "`backup status` exits 1 when the newest backup ended longer ago than this",
                                  parse_duration, group=BACKUPS)
    backup_archive_timeout: int = setting(
        "BACKUP_ARCHIVE_TIMEOUT", "60",
        "seconds after which a quiet cluster switches to a new WAL segment so that it is archived "
        "(`archive_timeout`): the most a lost cluster can lose", integer(1), group=BACKUPS)
    backup_log_path: Path = setting(  # noqa: RUF009 - the declaration; a Path is immutable
        "BACKUP_LOG_PATH", "/var/log/pgbackrest", "pgBackRest's log files (owned by postgres)", path, group=BACKUPS)
    # Not settings: what start-up makes of them.
    # FORWARDED_ALLOW_IPS parsed (app/addresses.py): the proxies whose X-Forwarded-For is read;
    # None means every peer (`*`, refused in production).
    trusted_proxies: tuple | None = (ipaddress.ip_network("127.0.0.1/32"),)
    # The OpenAPI documents' `servers`: PUBLIC_BASE_URL when it is set, else relative to where
    # the document was fetched (the default address above may not be the one clients reach).
    openapi_server: str = "/"
    secrets: dict[str, str] = dataclasses.field(default_factory=dict)
    generated_secrets: tuple[str, ...] = ()

    @property
    def webhooks_public_only(self) -> bool:
        """Outside development and test, webhooks go to https URLs of public addresses only."""
        return self.env not in ("development", "test")

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def development(self) -> bool:
        return self.env == "development"

    def secret(self, name: str) -> str:
        return self.secrets[name]

    def mail_problem(self, environ: dict[str, str] | None = None) -> str | None:
        """Why production must not start its API with this mail server (it sends the login
        codes), or None: SMTP_URL unset (the derived default is the development catcher), not
        smtp(s)://host, or on this machine without SMTP_ALLOW_LOOPBACK. Never quotes the URL's
        credentials."""
        if not self.production:
            return None
        env = os.environ if environ is None else environ
        if not env.get("SMTP_URL"):
            return ("SMTP_URL is not set: production sends the holders' login codes only to a mail server named "
                    "explicitly (smtps://user:password@mail.example.com); the default is the sandbox's catcher")
        parts = urlsplit(self.smtp_url)
        try:
            host = parts.hostname or ""
            parts.port  # noqa: B018 (a port that is not a number raises here)
        except ValueError:
            host = ""
        if parts.scheme not in ("smtp", "smtps") or not host:
            return "SMTP_URL must look like smtps://user:password@host[:port] or smtp://host[:port]"
        if is_loopback(host) and not self.smtp_allow_loopback:
            return (f"SMTP_URL names a mail server on this machine ({host}), where the sandbox's catcher may "
                    "listen: name the real one, or set SMTP_ALLOW_LOOPBACK=true for a local relay")
        return None

    def listen_problem(self, host: str) -> str | None:
        """Why this process must not listen on `host`, or None: APP_ENV=test (ephemeral secrets,
        the sandbox's defaults, no production safeguard) serves on loopback only."""
        if self.env == "test" and not is_loopback(host):
            return (f"APP_ENV=test listens on loopback only (127.0.0.1, ::1), not on {host!r}: test mode has "
                    "none of production's safeguards")
        return None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, *, require_mode: bool = False) -> Config:
        """The configuration of this process. `require_mode`: refuse to guess APP_ENV (serve and
        worker: a server started without it must not run with development's generated secrets
        and loopback webhooks)."""
        env = dict(os.environ if environ is None else environ)
        if require_mode and not env.get("APP_ENV"):
            raise ConfigError("APP_ENV is not set: serve and worker run only in an explicit mode (APP_ENV=production "
                              "in a deployment; make run sets APP_ENV=development)")
        env_mode = mode("APP_ENV", env.get("APP_ENV") or "development")
        found: dict[str, str] = {}
        generated: list[str] = []
        if env_mode == "production":
            problems = secret_problems(env)
            if problems:
                raise ConfigError("production refuses to start: " + "; ".join(problems)
                                  + " (see .env.example)")
        file_secrets: dict[str, str] = {}
        if env_mode == "development":
            dev_file = Path(env.get("DEV_ENV_FILE") or DEV_ENV_FILE)
            if not all(env.get(name) for name in SECRET_NAMES):
                file_secrets = development_secrets(dev_file)
            elif dev_file.is_file():
                file_secrets = read_env_file(dev_file)
            # The file carries settings too (POSTSALES_ALLOWED_ORIGINS=...); the environment wins.
            for name, value in file_secrets.items():
                if name not in SECRET_NAMES and name not in ("APP_ENV", "DEV_ENV_FILE"):
                    env.setdefault(name, value)
        for name in SECRET_NAMES:
            value = env.get(name) or file_secrets.get(name, "")
            if not value:
                value = secrets.token_urlsafe(48)  # test mode: ephemeral, tokens die with the process
                generated.append(name)
            found[name] = value
        values: dict[str, Any] = {"env": env_mode}
        declared_fields = [(f.name, f.metadata["setting"]) for f in dataclasses.fields(cls) if "setting" in f.metadata]
        # Derived defaults last: they read the settings they derive from.
        for name, declared in sorted(declared_fields, key=lambda pair: pair[1].derive is not None):
            if name in values:
                continue
            raw = env.get(declared.name)
            if raw is None or (raw == "" and not declared.empty_is_value):
                raw = declared.derive(values) if declared.derive else declared.default
            values[name] = declared.kind(declared.name, raw)
        trusted_proxies = parse_trusted(values["forwarded_allow_ips"])
        if trusted_proxies is None and env_mode == "production":
            raise ConfigError("FORWARDED_ALLOW_IPS='*' trusts any client to name its own address (every per-IP "
                              "limit then keys on what the client writes): name the proxies in front of the "
                              "API, e.g. FORWARDED_ALLOW_IPS=10.0.0.5,10.0.1.0/24")
        return cls(**values, trusted_proxies=trusted_proxies,
                   openapi_server=url("PUBLIC_BASE_URL", env.get("PUBLIC_BASE_URL", "")) or "/",
                   secrets=found, generated_secrets=tuple(generated))


def declared() -> dict[str, Setting]:
    """Config's settings by field name."""
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(Config) if "setting" in f.metadata}


def settings() -> list[Setting]:
    """Every setting in the order of the documents: group by group (GROUPS), and within a group
    Config's fields, then the variables read outside them (PROCESS_SETTINGS), then the secrets,
    each as declared."""
    every = [*declared().values(), *PROCESS_SETTINGS, *SECRETS.values()]
    return sorted(every, key=lambda item: GROUPS.index(item.group))
