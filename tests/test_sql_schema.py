"""sql/schema/ is the schema a fresh deploy makes (`make schema`): every SQL change shows there as
a diff a reviewer reads, and a change deployed without its picture fails here."""
from __future__ import annotations

import os

import pytest

from scripts import sql_schema
from tests.conftest import ROOT


def _difference(picture) -> str | None:
    """None when the test database (deployed fresh by scripts/test.sh) is what sql/schema/ shows,
    else the message a developer reads."""
    deployed = picture.render(picture.dump(os.environ["ADMIN_DATABASE_URL"]))
    committed = picture.committed()
    if committed == deployed:
        return None
    return (f"sql/schema/ differs from a fresh deploy: run `{picture.COMMAND}` and commit the result.\n"
            f"{picture.diff(committed, deployed)}")


def test_the_committed_schema_picture_is_a_fresh_deploys(admin):
    if problem := _difference(sql_schema):
        pytest.fail(problem, pytrace=False)


def test_a_deployed_index_that_the_picture_does_not_show_is_found(admin):
    picture = sql_schema
    assert _difference(picture) is None
    admin.execute("CREATE INDEX risk_items_unpictured_idx ON insurance.risk_items (variant)")
    try:
        problem = _difference(picture)
    finally:
        admin.execute("DROP INDEX insurance.risk_items_unpictured_idx")
    assert problem is not None and "run `make schema`" in problem
    assert "+CREATE INDEX risk_items_unpictured_idx ON insurance.risk_items USING btree (variant);" in problem
    assert "sql/schema/insurance.sql" in problem


def test_the_picture_reads_as_tables_with_their_parts_then_functions():
    text = (ROOT / "sql" / "schema" / "insurance.sql").read_text()
    table = text.index("-- Table insurance.risk_items ")
    # The table, its index, its policy and its trigger together, before the functions.
    parts = [text.index(s, table) for s in ("CREATE TABLE insurance.risk_items (",
                                            "CREATE INDEX risk_items_channel_id_idx ON insurance.risk_items",
                                            "CREATE POLICY risk_items_select_channel ON insurance.risk_items",
                                            "CREATE TRIGGER risk_items_touch_updated_at ")]
    assert parts == sorted(parts) and parts[-1] < text.index("-- Functions of insurance")
    assert "Dumped from" not in text and "OWNER TO insurance_owner" not in text and "\\restrict" not in text
