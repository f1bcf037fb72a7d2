"""Lost rows back from a side copy: a channel's risk items and every row that hangs from them
(each table with a foreign key to insurance.risk_items: beneficiaries, claimants, documents,
emissions, orders, claims), read from the copy (`python -m app backup restore`) and written
into the live database with their ids, in one transaction while the service serves.

Rows the live database still has are left alone: only items missing there come back, with the
rows of theirs. The triggers of those tables stay quiet for these inserts
(`session_replication_role = replica`, this transaction only): the rows come back as they were,
so a trigger must not act on them again (a second dispatch to the insurer, regenerated
documents). What those triggers keep besides the rows is set here instead: the channel's item
count (insurance.channel_item_counts) and the emission counts' deltas. The copy's data is
consistent (one point in time), so the foreign keys hold; they are checked before the commit.
One audit row (backup.recover_rows) says who brought what back.
"""
from __future__ import annotations

import getpass
import time
from typing import Any

import orjson
import psycopg
from psycopg import sql

from app.backup import BackupError, connect
from app.config import Config

ITEMS = ("insurance", "risk_items")


def _children(live: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(schema, table, column) of every single-column foreign key to insurance.risk_items."""
    return [(r["schema"], r["table"], r["column"]) for r in live.execute(
        """SELECT n.nspname AS schema, c.relname AS table, a.attname AS column
             FROM pg_constraint k
             JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
            WHERE k.contype = 'f' AND k.confrelid = 'insurance.risk_items'::regclass
              AND cardinality(k.conkey) = 1
            ORDER BY 1, 2""").fetchall()]


def _columns(conn: psycopg.Connection, schema: str, table: str) -> list[str]:
    return [r["attname"] for r in conn.execute(
        """SELECT attname FROM pg_attribute
            WHERE attrelid = format('%%I.%%I', %s::text, %s::text)::regclass
              AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
            ORDER BY attnum""", (schema, table)).fetchall()]


def _copy(source: psycopg.Connection, live: psycopg.Connection, schema: str, table: str, column: str,
          ids: list[int]) -> int:
    """The copy's rows of `table` whose `column` is in `ids`, into the live table; how many."""
    columns = _columns(live, schema, table)
    names = sql.SQL(", ").join(map(sql.Identifier, columns))
    target = sql.Identifier(schema, table)
    read = sql.SQL("COPY (SELECT {names} FROM {target} WHERE {column} = ANY({ids})) TO STDOUT (FORMAT binary)").format(
        names=names, target=target, column=sql.Identifier(column), ids=sql.Literal(ids))
    write = sql.SQL("COPY {target} ({names}) FROM STDIN (FORMAT binary)").format(target=target, names=names)
    with source.cursor() as out, live.cursor() as into:
        with out.copy(read) as reading, into.copy(write) as writing:
            for chunk in reading:
                writing.write(chunk)
        return into.rowcount


def recover_channel(config: Config, source_url: str, channel_id: str) -> dict[str, Any]:
    started = time.monotonic()
    try:
        source = connect(source_url)
    except psycopg.OperationalError as exc:
        raise BackupError(f"cannot connect to the side copy: {str(exc).splitlines()[0]}") from None
    live = psycopg.connect(config.admin_database_url, row_factory=psycopg.rows.dict_row)
    with source, live:
        if source.execute("SELECT system_identifier FROM pg_control_system()").fetchone() != \
                live.execute("SELECT system_identifier FROM pg_control_system()").fetchone() or \
                source.execute("SELECT inet_server_port() AS p").fetchone() == \
                live.execute("SELECT inet_server_port() AS p").fetchone():
            raise BackupError("--from must be a side copy of this cluster (restored from its backups), "
                              "not the live database or another cluster")
        if not live.execute("SELECT 1 FROM insurance.channels WHERE id = %s", (channel_id,)).fetchone():
            raise BackupError(f"channel {channel_id} is not in the live database (bring the channel back first)")
        copied = [r["id"] for r in source.execute(
            "SELECT id FROM insurance.risk_items WHERE channel_id = %s ORDER BY id", (channel_id,))]
        present = {r["id"] for r in live.execute(
            "SELECT id FROM insurance.risk_items WHERE id = ANY(%s)", (copied,))}
        missing = [i for i in copied if i not in present]
        counts: dict[str, int] = {}
        with live.transaction():
            live.execute("SET LOCAL lock_timeout = '5s'")
            # The rows come back as they were: no trigger acts on them again (see the module's doc).
            live.execute("SET LOCAL session_replication_role = replica")
            counts["insurance.risk_items"] = _copy(source, live, *ITEMS, "id", missing)
            for schema, table, column in _children(live):
                counts[f"{schema}.{table}"] = _copy(source, live, schema, table, column, missing)
            live.execute("SET LOCAL session_replication_role = origin")
            # What the quiet triggers keep besides the rows.
            live.execute(
                """INSERT INTO insurance.channel_item_counts AS c (channel_id, count) VALUES (%s, %s)
                   ON CONFLICT (channel_id) DO UPDATE SET count = c.count + excluded.count""",
                (channel_id, counts["insurance.risk_items"]))
            live.execute(
                """INSERT INTO insurance.emission_count_deltas (status, provider, delta)
                   SELECT status, provider, count(*) FROM insurance.integration_emissions
                    WHERE risk_item_id = ANY(%s) GROUP BY 1, 2""", (missing,))
            orphans = live.execute(
                """SELECT count(*) AS n FROM insurance.risk_items i
                    WHERE i.id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM insurance.package_variants v
                                                          WHERE v.package_id = i.package_id AND v.code = i.variant)""",
                (missing,)).fetchone()["n"]
            if orphans:
                raise BackupError(f"{orphans} items name a package or variant the live database no longer has: "
                                  "bring those back first; nothing was written")
            live.execute("SELECT insurance.record_audit(%s, 'backup.recover_rows', %s, 'ok', %s)",
                         (f"cli:{getpass.getuser()}", orjson.dumps([{"channel": channel_id}]).decode(),
                          orjson.dumps({"via": "cli", "rows": counts, "items": len(missing)}).decode()))
    return {"channel": channel_id, "items_in_copy": len(copied), "already_live": len(present),
            "rows": counts, "seconds": round(time.monotonic() - started, 2)}
