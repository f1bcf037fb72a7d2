"""`people export EMAIL`, `people erase EMAIL [--yes]` and `audit --about EMAIL`: a data protection
officer's requests from the command line (docs/privacy.md).

`people` is about the people the policies name (holders, beneficiaries, insured persons); the
back-office's operators are `users`. Each call goes through one admin.* SQL function, which writes
its audit row (people.export, people.erase) in the same transaction.
"""
from __future__ import annotations

import argparse
import re
import sys

from app.cli import actor, add_actor, admin, command_group, fail, print_json

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def email_arg(value: str) -> str:
    value = value.strip().lower()
    if len(value) > 254 or not _EMAIL.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an e-mail address such as ada@example.com")
    return value


def export(args) -> int:
    print_json(admin("admin.person_export", actor(args), args.email))
    return 0


def erase(args) -> int:
    who = actor(args)
    if not args.yes:
        print(f"Erase what no duty keeps about {args.email} (login codes, addresses, delivered bodies, provider "
              "answers) and pseudonymize their policies whose retention has ended? Type yes to go on: ",
              end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer != "yes":
            fail("nothing erased (the answer was not yes; --yes skips the question)", code=1)
    print_json(admin("admin.person_erase", who, args.email))
    return 0


def audit(args) -> int:
    print_json(admin("admin.audit_about", args.about, args.limit))
    return 0


def _limit(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 10000:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number from 1 to 10000")
    return int(value)


def register(subparsers) -> None:
    people = command_group(subparsers, "people",
                           "a person's data (holder, beneficiary, insured): export, erasure under retention")
    p = people.add_parser("export", help="everything held about the person, as one JSON document (audited)")
    p.add_argument("email", type=email_arg, metavar="EMAIL")
    add_actor(p)
    p.set_defaults(func=export)
    p = people.add_parser("erase", help="erase what no duty keeps, pseudonymize contract data past its retention, "
                                        "say what is kept and until when (asks first unless --yes; audited)")
    p.add_argument("email", type=email_arg, metavar="EMAIL")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_actor(p)
    p.set_defaults(func=erase)
    p = subparsers.add_parser("audit", help="the audit rows about a person: who saw, exported or erased their data")
    p.add_argument("--about", type=email_arg, required=True, metavar="EMAIL", help="the person's e-mail")
    p.add_argument("--limit", type=_limit, default=100, help="at most N rows, newest first (default 100)")
    p.set_defaults(func=audit)
