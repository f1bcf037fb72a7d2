"""Configuration: a class with development defaults that the environment overrides.

Nothing is read at import time; `Config.from_env()` is called by `create_app` and the
command line. In production (`APP_ENV=production`) a missing or short secret stops start-up,
and the message names every one. In development the secrets the environment does not set come
from one git-ignored file (`DEV_ENV_FILE`, default `.env.development`, mode 0600), written by
the first process that needs it: `make run`, its API, its worker and any `python -m app
worker` or `serve` started by hand beside it then sign and verify with the same secrets.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from app.addresses import parse_trusted

ROOT = Path(__file__).resolve().parent.parent

SECRET_NAMES = (
    "POSTSALES_JWT_SECRET",
    "AUTH_SECRET",
    "AUTH_SECRET_V2",
    "AUTH_IA_SECRET",
    "AUTH_IA_SECRET_V2",
    "AUTH_INTEGRATION_SECRET",
    "AUTH_INTEGRATION_SECRET_V2",
    "SERVICE_ROLE_SECRET",
    "OTP_HASH_SECRET",
    "WEBHOOK_SECRET_KEY",  # partner webhook secrets are derived from it (app/webhooks.py)
)
MIN_SECRET_BYTES = 32
DEV_ENV_FILE = ROOT / ".env.development"

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


# The holder web app's usual development addresses (a dev server on port 3000): allowed by
# default under APP_ENV=development only, never in test or production.
DEVELOPMENT_HOLDER_ORIGINS = "http://localhost:3000,http://127.0.0.1:3000"


def _origins(value: str) -> tuple[str, ...]:
    """Comma-separated origins as a browser sends them in `Origin`: no trailing slash, scheme
    and host in lower case (`https://App.example.com/` matches `https://app.example.com`)."""
    return tuple(dict.fromkeys(o.strip().rstrip("/").lower() for o in value.split(",") if o.strip()))


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


def missing_secrets(env: dict[str, str]) -> list[str]:
    """'NAME is missing' / 'NAME is shorter than 32 bytes', for every secret production needs."""
    problems = []
    for name in SECRET_NAMES:
        value = env.get(name, "")
        if len(value.encode()) < MIN_SECRET_BYTES:
            problems.append(f"{name} is {'missing' if not value else f'shorter than {MIN_SECRET_BYTES} bytes'}")
    return problems


def parse_duration(name: str, value: str) -> int:
    """'15m', '1h', '24h', '7d' -> seconds."""
    match = _DURATION.match(value.strip())
    if not match or int(match.group(1)) == 0:
        raise ConfigError(f"{name}={value!r} is not a duration such as 15m, 1h, 24h or 7d")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _int(env: dict[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{name}={raw!r} must be at least {minimum}")
    return value


def _float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _listen_url(env: dict[str, str], database_url: str) -> str:
    """DATABASE_LISTEN_URL: a direct connection for the worker's LISTEN (PgBouncer's transaction
    pooling cannot carry it); 'none' to poll only; unset: DATABASE_URL itself."""
    value = env.get("DATABASE_LISTEN_URL", "").strip()
    if value.lower() == "none":
        return ""
    return value or database_url


def _positive_float(env: dict[str, str], name: str, default: float) -> float:
    value = _float(env, name, default)
    if not 0 < value < 86400:
        raise ConfigError(f"{name}={env.get(name)!r} must be a number of seconds above 0")
    return value


@dataclasses.dataclass(frozen=True)
class Config:
    env: str = "development"
    database_url: str = "postgresql://insurance_app@127.0.0.1:5432/insurance"
    admin_database_url: str = "postgresql://postgres@127.0.0.1:5432/insurance"
    db_pool_min: int = 2
    # About twice the database's cores: more connections than that only queue on its CPUs, and
    # the queue shows in the tail (bench-gateway, 10 documents per call on this 2-core machine:
    # p99 51-78 ms with 10, 21-31 ms with 4, the same req/s). Callers wait at app/db.py's gate.
    db_pool_max: int = 4
    db_statement_cache_size: int = 256
    database_listen_url: str = ""  # the worker's LISTEN connection; "" = polling only
    # A standby for the partner's and the holder's reads; "" = every read on DATABASE_URL.
    read_database_url: str = ""
    read_max_lag: float = 1.0  # seconds of replay lag beyond which the standby is skipped
    db_acquire_timeout: float = 3.0
    host: str = "127.0.0.1"
    port: int = 8000
    forwarded_allow_ips: str = "127.0.0.1"
    # FORWARDED_ALLOW_IPS parsed (app/addresses.py): the proxies whose X-Forwarded-For is read;
    # None means every peer (`*`, refused in production).
    trusted_proxies: tuple | None = (ipaddress.ip_network("127.0.0.1/32"),)
    headers_timeout: float = 10.0  # a request's head must be complete within it (app/server.py)
    trpc_max_batch: int = 10
    public_base_url: str = "http://127.0.0.1:8000"
    # The OpenAPI documents' `servers`: PUBLIC_BASE_URL when it is set, else relative to where
    # the document was fetched (the default address above may not be the one clients reach).
    openapi_server: str = "/"
    sqitch_plan: Path = ROOT / "sqitch.plan"
    secrets: dict[str, str] = dataclasses.field(default_factory=dict)
    generated_secrets: tuple[str, ...] = ()
    postsales_jwt_expiration: int = 3600
    postsales_otp_ttl: int = 600
    postsales_otp_max_attempts: int = 5
    postsales_otp_ip_per_hour: int = 20
    postsales_verify_ip_per_hour: int = 50
    postsales_allowed_origins: tuple[str, ...] = ()
    gateway_jwt_expiration: int = 3600
    smtp_url: str = "smtp://127.0.0.1:1025"
    mail_from: str = "Insurance <no-reply@insurance.invalid>"
    rate_limit_per_minute: int = 0
    chat_webhook_url: str = ""
    integration_max_attempts: int = 8
    integration_retry_base_seconds: int = 60
    integration_retry_cap_seconds: int = 6 * 3600
    integration_provider_concurrency: int = 16
    worker_concurrency: int = 64
    worker_dispatch_batch: int = 25
    worker_poll_interval: float = 1.0
    worker_lease_seconds: int = 60
    http_connect_timeout: float = 5.0
    http_read_timeout: float = 15.0
    http_total_timeout: float = 30.0
    outbox_max_attempts: int = 20
    sandbox_port: int = 8100
    log_level: str = "info"
    dashboard_session_ttl: int = 12 * 3600
    dashboard_login_concurrency: int = 2
    outbox_retention: int = 7 * 86400
    dashboard_allowed_origins: tuple[str, ...] = ()
    metrics_allowed_ips: tuple = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("::1/128"))
    worker_metrics_port: int = 0  # 0: the worker serves no /metrics
    sandbox_smtp_port: int = 1025
    max_body_bytes: int = 1024 * 1024  # authenticated routes; anonymous ones: app.validation
    webhook_timeout: float = 10.0              # total deadline of one webhook delivery
    webhook_retry_base_seconds: int = 10
    webhook_retry_cap_seconds: int = 3600
    webhook_secret_overlap: int = 24 * 3600    # both signatures this long after a rotation
    webhook_endpoint_concurrency: int = 4      # deliveries in flight per endpoint, per worker

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

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "Config":
        env = dict(os.environ if environ is None else environ)
        mode = env.get("APP_ENV", "development")
        if mode not in ("development", "test", "production"):
            raise ConfigError(f"APP_ENV={mode!r} must be development, test or production")
        found: dict[str, str] = {}
        generated: list[str] = []
        if mode == "production":
            problems = missing_secrets(env)
            if problems:
                raise ConfigError("production refuses to start: " + "; ".join(problems)
                                  + " (see .env.example)")
        file_secrets: dict[str, str] = {}
        if mode == "development":
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
        port = _int(env, "PORT", 8000, 1)
        host = env.get("HOST", "127.0.0.1")
        origins = _origins(env.get("POSTSALES_ALLOWED_ORIGINS",
                                   DEVELOPMENT_HOLDER_ORIGINS if mode == "development" else ""))
        metrics_ips = env.get("METRICS_ALLOWED_IPS", "127.0.0.1,::1")
        try:
            metrics_networks = tuple(ipaddress.ip_network(part.strip(), strict=False)
                                     for part in metrics_ips.split(",") if part.strip())
        except ValueError:
            raise ConfigError(f"METRICS_ALLOWED_IPS={metrics_ips!r} is not a list of addresses or networks") from None
        forwarded = env.get("FORWARDED_ALLOW_IPS", cls.forwarded_allow_ips).strip()
        try:
            trusted_proxies = parse_trusted(forwarded)
        except ValueError:
            raise ConfigError(f"FORWARDED_ALLOW_IPS={forwarded!r} is not a list of addresses or networks "
                              "(the proxies in front of the API)") from None
        if trusted_proxies is None and mode == "production":
            raise ConfigError("FORWARDED_ALLOW_IPS='*' trusts any client to name its own address (every per-IP "
                              "limit then keys on what the client writes): name the proxies in front of the "
                              "API, e.g. FORWARDED_ALLOW_IPS=10.0.0.5,10.0.1.0/24")
        return cls(
            env=mode,
            database_url=env.get("DATABASE_URL", cls.database_url),
            admin_database_url=env.get("ADMIN_DATABASE_URL", cls.admin_database_url),
            db_pool_min=_int(env, "DB_POOL_MIN", cls.db_pool_min, 1),
            db_pool_max=_int(env, "DB_POOL_MAX", cls.db_pool_max, 1),
            db_statement_cache_size=_int(env, "DB_STATEMENT_CACHE_SIZE", cls.db_statement_cache_size),
            database_listen_url=_listen_url(env, env.get("DATABASE_URL", cls.database_url)),
            db_acquire_timeout=_float(env, "DB_ACQUIRE_TIMEOUT", cls.db_acquire_timeout),
            read_database_url=env.get("READ_DATABASE_URL", "").strip(),
            read_max_lag=_positive_float(env, "READ_MAX_LAG", cls.read_max_lag),
            host=host,
            port=port,
            forwarded_allow_ips=forwarded,
            trusted_proxies=trusted_proxies,
            headers_timeout=_positive_float(env, "HEADERS_TIMEOUT", cls.headers_timeout),
            trpc_max_batch=_int(env, "TRPC_MAX_BATCH", cls.trpc_max_batch, 1),
            public_base_url=env.get("PUBLIC_BASE_URL", f"http://{host}:{port}").rstrip("/"),
            openapi_server=env.get("PUBLIC_BASE_URL", "").rstrip("/") or "/",
            sqitch_plan=Path(env.get("SQITCH_PLAN", str(cls.sqitch_plan))),
            secrets=found,
            generated_secrets=tuple(generated),
            postsales_jwt_expiration=parse_duration(
                "POSTSALES_JWT_EXPIRATION", env.get("POSTSALES_JWT_EXPIRATION", "1h")),
            postsales_otp_ttl=parse_duration("POSTSALES_OTP_TTL", env.get("POSTSALES_OTP_TTL", "10m")),
            postsales_otp_max_attempts=_int(env, "POSTSALES_OTP_MAX_ATTEMPTS", 5, 1),
            postsales_otp_ip_per_hour=_int(env, "POSTSALES_OTP_IP_PER_HOUR", 20),
            postsales_verify_ip_per_hour=_int(env, "POSTSALES_VERIFY_IP_PER_HOUR", 50),
            postsales_allowed_origins=origins,
            gateway_jwt_expiration=parse_duration(
                "GATEWAY_JWT_EXPIRATION", env.get("GATEWAY_JWT_EXPIRATION", "1h")),
            smtp_url=env.get("SMTP_URL", cls.smtp_url),
            mail_from=env.get("MAIL_FROM", cls.mail_from),
            rate_limit_per_minute=_int(env, "RATE_LIMIT_PER_MINUTE", 0),
            chat_webhook_url=env.get("CHAT_WEBHOOK_URL", ""),
            integration_max_attempts=_int(env, "INTEGRATION_MAX_ATTEMPTS", 8, 1),
            integration_retry_base_seconds=_int(env, "INTEGRATION_RETRY_BASE_SECONDS", 60, 1),
            integration_retry_cap_seconds=_int(env, "INTEGRATION_RETRY_CAP_SECONDS", 6 * 3600, 1),
            integration_provider_concurrency=_int(env, "INTEGRATION_PROVIDER_CONCURRENCY", 16, 1),
            worker_concurrency=_int(env, "WORKER_CONCURRENCY", 64, 1),
            worker_dispatch_batch=_int(env, "WORKER_DISPATCH_BATCH", 25, 1),
            worker_poll_interval=_float(env, "WORKER_POLL_INTERVAL", 1.0),
            worker_lease_seconds=_int(env, "WORKER_LEASE_SECONDS", 60, 1),
            http_connect_timeout=_float(env, "HTTP_CONNECT_TIMEOUT", 5.0),
            http_read_timeout=_float(env, "HTTP_READ_TIMEOUT", 15.0),
            http_total_timeout=_positive_float(env, "HTTP_TOTAL_TIMEOUT", 30.0),
            outbox_max_attempts=_int(env, "OUTBOX_MAX_ATTEMPTS", 20, 1),
            sandbox_port=_int(env, "SANDBOX_PORT", 8100, 1),
            log_level=env.get("LOG_LEVEL", "info").lower(),
            dashboard_session_ttl=parse_duration(
                "DASHBOARD_SESSION_TTL", env.get("DASHBOARD_SESSION_TTL", "12h")),
            dashboard_login_concurrency=_int(env, "DASHBOARD_LOGIN_CONCURRENCY", 2, 1),
            outbox_retention=parse_duration("OUTBOX_RETENTION", env.get("OUTBOX_RETENTION", "7d")),
            dashboard_allowed_origins=_origins(env.get("DASHBOARD_ALLOWED_ORIGINS", "")),
            metrics_allowed_ips=metrics_networks,
            worker_metrics_port=_int(env, "WORKER_METRICS_PORT", 0),
            sandbox_smtp_port=_int(env, "SANDBOX_SMTP_PORT", 1025, 0),
            max_body_bytes=_int(env, "MAX_BODY_BYTES", cls.max_body_bytes, 1024),
            webhook_timeout=_positive_float(env, "WEBHOOK_TIMEOUT", 10.0),
            webhook_retry_base_seconds=_int(env, "WEBHOOK_RETRY_BASE_SECONDS", 10, 1),
            webhook_retry_cap_seconds=_int(env, "WEBHOOK_RETRY_CAP_SECONDS", 3600, 1),
            webhook_secret_overlap=parse_duration(
                "WEBHOOK_SECRET_OVERLAP", env.get("WEBHOOK_SECRET_OVERLAP", "24h")),
            webhook_endpoint_concurrency=_int(env, "WEBHOOK_ENDPOINT_CONCURRENCY", 4, 1),
        )
