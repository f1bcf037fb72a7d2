"""Each input rule is written once in Python and once in SQL; these tests prove the copies agree,
so that changing one without the other fails here rather than in production."""
from __future__ import annotations

import re

import psycopg
import pytest

from app import validation
from app.gateway import BRANCHES
from app.orchestrator.model import VARIANTS


def quoted_values(admin, table: str, column: str) -> set[str]:
    """The string literals of the CHECK constraint on `table.column` (an IN list or an ARRAY)."""
    [row] = admin.execute(
        """SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
            WHERE c.conrelid = %s::regclass AND c.contype = 'c' AND a.attname = %s""",
        (table, column)).fetchall()
    return set(re.findall(r"'([^']*)'", row["def"]))


def test_the_gateway_branches_match_the_channels_check(admin):
    assert set(BRANCHES) == quoted_values(admin, "insurance.channels", "branches")


def test_the_variants_match_the_package_variants_check(admin):
    assert set(VARIANTS) == quoted_values(admin, "insurance.package_variants", "code")


ADDRESSES = ["ada@example.com", "a.b+c@sub.example.co", "x@y.z", "no-at.example.com", "two@@example.com",
             "a@b", "a b@example.com", "a@example.com\n", "tab\t@example.com", "@example.com", "a@.com",
             "a@example.", "UPPER@example.com", "a" * 250 + "@b.co", "a" * 240 + "@b.co"]


@pytest.mark.parametrize("address", ADDRESSES)
def test_the_python_email_rule_is_the_domains(admin, address):
    try:
        admin.execute("SELECT %s::insurance.email", (address,))
        stored = True
    except psycopg.errors.CheckViolation:
        stored = False
    try:
        early = validation.email(address) == address  # the app lower-cases; the domain refuses upper case
    except validation.ApiError:
        early = False
    assert early == stored, address
