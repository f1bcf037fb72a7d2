"""`python -m app settings`: docs/configuration.md and .env.example, written from the one
declaration of every setting (app/config.py); `--check` writes nothing and exits 1 when a
committed copy differs (tests/unit/test_settings.py)."""
from __future__ import annotations

import sys
from itertools import groupby

from app.config import ROOT, SECRETS, Setting, settings

DOCUMENTS = {"docs/configuration.md": "markdown", ".env.example": "env_example"}

INTRO = """# Configuration

Read from the environment when a process starts (`app/config.py`); nothing at import time.
Each setting is declared once there; this page and `.env.example` are written from that
declaration by `python -m app settings` (do not edit them by hand), and so are the flags that
override some of them (`worker --batch` is `WORKER_BATCH`). `serve`, `worker` and every command that
reads the settings refuse to start without `APP_ENV`; `make run` sets `APP_ENV=development`,
the Docker image `APP_ENV=production`. Production's API also needs an explicit `SMTP_URL` (docs/security.md, "Production's refusals").

How a setting reaches SQL, by one rule: a setting a SQL function needs during a call the app
makes is an argument of that call (`OUTBOX_MAX_ATTEMPTS` to `outbox.record_deliveries`; several
settings of one function travel as one JSON object keyed by their camelCase names, as the
`INTEGRATION_*` backoff does to `integrations.record_emission`); a setting SQL needs with no
call of the app, a pg_cron job's, is a database setting written by `python -m app migrate`
(`OUTBOX_RETENTION`, `CRON_HISTORY_RETENTION`). SQL never reads the environment.
"""


def _default(item: Setting) -> str:
    if item.shown is not None:
        return item.shown
    return f"`{item.default}`" if item.default else ""


def markdown() -> str:
    lines = [INTRO]
    for group, items in groupby(settings(), key=lambda s: s.group):
        lines += [f"## {group}", "", "| variable | default | meaning |", "|---|---|---|"]
        for item in items:
            doc = item.doc.replace("|", "\\|")
            lines.append(f"| `{item.name}` | {_default(item)} | {doc} |")
        lines.append("")
    return "\n".join(lines)


def env_example() -> str:
    lines = ["# Every setting of the API, the worker and the command line, written by `python -m app settings`",
             "# from app/config.py (docs/configuration.md says the same). Copy what you need into your",
             "# deployment's environment or secret store. `make run` needs none of this: development",
             "# draws its secrets into .env.development and every other setting has a default.",
             "# Secrets: at least 32 bytes each, drawn at random (production refuses a predictable one: below",
             "# 128 bits estimated from its characters' frequencies), all different; generate one with",
             "#   python3 -c 'import secrets; print(secrets.token_urlsafe(48))'", ""]
    for group, items in groupby(settings(), key=lambda s: s.group):
        lines += [f"# --- {group}", ""]
        for item in items:
            lines.append(f"# {item.doc}")
            if item.name == "APP_ENV":
                lines.append("APP_ENV=production")
            elif item.name in SECRETS:
                lines.append(f"{item.name}=")
            elif item.derive is not None or item.shown is not None:
                lines.append(f"# {item.name}=    (default: {item.shown})")
            else:
                lines.append(f"{item.name}={item.default}")
            lines.append("")
    return "\n".join(lines)


def register(subparsers) -> None:
    p = subparsers.add_parser("settings", help="write docs/configuration.md and .env.example from app/config.py")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a document is stale")
    p.set_defaults(func=run)


def run(args) -> int:
    stale = []
    for name, render in DOCUMENTS.items():
        target, text = ROOT / name, globals()[render]()
        if (target.read_text() if target.exists() else None) != text:
            stale.append(name)
            if not args.check:
                target.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run python -m app settings)", file=sys.stderr)
        return 1
    for name in stale:
        print(f"wrote {name}")
    return 0
