"""The read model of the risk items (insurance.risk_item_documents) under what pgTAP cannot show:
two real transactions writing one item at once, and the deploy's backfill of items that exist
before the change. pgTAP (tests/pgtap/44_risk_item_documents.sql) proves each kind of write alone.

Two writers of one item through different tables (READ COMMITTED, as the app runs): the first
writes and holds its transaction open, the second writes and waits, the first commits, then the
second. Whatever the order, the stored document must be the computed one: neither writer's
change may be lost by the other's refresh of the document.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.conftest import ROOT

STALE = """
SELECT count(*) AS n FROM insurance.computed_risk_item_documents c
  FULL JOIN insurance.risk_item_documents d ON d.risk_item_id = c.risk_item_id
 WHERE (c.risk_item_id = %(item)s OR d.risk_item_id = %(item)s)
   AND (c.risk_item_id IS NULL OR d.risk_item_id IS NULL
        OR (c.channel_id, c.document) IS DISTINCT FROM (d.channel_id, d.document))"""

WRITES = {
    "the item's metadata (an emission)":
        """UPDATE insurance.risk_items SET metadata = metadata || '{"integration": {"state": "SUCCESS"}}'
            WHERE id = %(item)s""",
    "the item's contact data (a PATCH)":
        """UPDATE insurance.risk_items SET insured_subject = insured_subject || '{"phone": "+34 611"}'
            WHERE id = %(item)s""",
    "a beneficiary's name":
        "UPDATE insurance.beneficiaries SET name = 'Renamed' WHERE id = %(beneficiary)s",
    "a beneficiary removed":
        "DELETE FROM insurance.beneficiaries WHERE id = %(beneficiary)s",
    "a beneficiary added":
        "INSERT INTO insurance.beneficiaries (risk_item_id, name) VALUES (%(item)s, 'Added')",
    "the package's uid":
        "UPDATE insurance.packages SET uid = uid || '-renamed' WHERE id = %(package)s",
}
PAIRS = [
    ("the item's metadata (an emission)", "a beneficiary's name"),
    ("a beneficiary's name", "the item's metadata (an emission)"),
    ("the item's contact data (a PATCH)", "a beneficiary removed"),
    ("a beneficiary removed", "the item's contact data (a PATCH)"),
    ("a beneficiary added", "the item's metadata (an emission)"),
    ("the item's metadata (an emission)", "a beneficiary added"),
    ("the package's uid", "a beneficiary's name"),
    ("a beneficiary's name", "the package's uid"),
    ("the package's uid", "the item's metadata (an emission)"),
    ("the item's metadata (an emission)", "the package's uid"),
]


def waiting_on_a_lock(admin, pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = admin.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        if row and row["wait_event_type"] == "Lock":
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("first,second", PAIRS, ids=[f"{a} | {b}" for a, b in PAIRS])
def test_two_writers_of_one_item_leave_its_document_current(admin, make_package, make_risk_item, first, second):
    package = make_package()
    item = make_risk_item(package=package, beneficiaries=[{"name": "Kid", "share": 10}])
    keys = {"item": item["id"], "package": package["id"],
            "beneficiary": admin.execute("SELECT id FROM insurance.beneficiaries WHERE risk_item_id = %s",
                                         (item["id"],)).fetchone()["id"]}
    url = os.environ["ADMIN_DATABASE_URL"]
    with psycopg.connect(url) as one, psycopg.connect(url) as two:  # READ COMMITTED, not autocommit
        one.execute(WRITES[first], keys)  # its transaction stays open, holding what it wrote
        failure: list[BaseException] = []

        def write_second() -> None:
            try:
                two.execute(WRITES[second], keys)
                two.commit()
            except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
                failure.append(exc)

        thread = threading.Thread(target=write_second)
        thread.start()
        try:
            # The second writer waits for the first (on the item's lock, or at worst on the
            # document's row): what a stale refresh would overwrite is committed meanwhile.
            assert waiting_on_a_lock(admin, two.info.backend_pid), "the second writer did not wait for the first"
        finally:
            one.commit()
            thread.join(10)
        assert not thread.is_alive() and not failure, failure
    assert admin.execute(STALE, keys).fetchone()["n"] == 0, \
        f"{second} after {first}: the stored document is not the computed one"


def test_the_deploy_stores_the_documents_of_items_that_exist_already(admin):
    """Deployed up to the change before it, with items and beneficiaries; then the change."""
    server = conninfo_to_dict(os.environ["ADMIN_DATABASE_URL"])
    name = f"readmodel_backfill_{uuid.uuid4().hex[:10]}"
    target = (f"db:pg://{server.get('user', 'postgres')}@{server.get('host', '127.0.0.1')}:"
              f"{server.get('port', 5432)}/{name}")
    env = {**os.environ, "SQITCH_FULLNAME": "pytest", "SQITCH_EMAIL": "pytest@insurance.invalid"}

    def sqitch(*args: str) -> None:
        subprocess.run(["sqitch", *args, target], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)

    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        sqitch("deploy", "--to", "risk_item_documents^")  # the change before it
        with psycopg.connect(make_conninfo(os.environ["ADMIN_DATABASE_URL"], dbname=name), autocommit=True) as conn:
            conn.execute("""
                WITH p AS (INSERT INTO insurance.packages (uid, name) VALUES ('old', 'Old') RETURNING id),
                     v AS (INSERT INTO insurance.package_variants (package_id, code, name)
                           SELECT id, 'travel', 'Travel' FROM p RETURNING package_id)
                INSERT INTO insurance.risk_items (package_id, policy_uid, variant, metadata)
                SELECT package_id, 'old-' || n, 'travel', jsonb_build_object('n', n)
                  FROM v, generate_series(1, 30) n""")
            conn.execute("""INSERT INTO insurance.beneficiaries (risk_item_id, name, email, is_holder, share)
                            SELECT id, 'B' || id, 'b' || id || '@example.com', id % 2 = 0, 50
                              FROM insurance.risk_items, generate_series(1, 2)""")
            sqitch("deploy", "--verify", "--to", "risk_item_documents")
            stored = conn.execute("""
                SELECT count(*) FILTER (WHERE d.document = c.document AND d.channel_id IS NOT DISTINCT FROM c.channel_id),
                       count(*)
                  FROM insurance.computed_risk_item_documents c
                  LEFT JOIN insurance.risk_item_documents d ON d.risk_item_id = c.risk_item_id""").fetchone()
            assert stored == (30, 30)
            assert conn.execute("""SELECT jsonb_array_length(document -> 'beneficiaries')
                                     FROM insurance.risk_item_documents LIMIT 1""").fetchone()[0] == 2
            sqitch("revert", "-y", "--to", "risk_item_documents^")
            assert conn.execute("SELECT to_regclass('insurance.risk_item_documents')").fetchone()[0] is None
            assert conn.execute("SELECT count(*) FROM insurance.beneficiaries").fetchone()[0] == 60
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
