"""Issue 41: READ_DATABASE_URL serves reads only from a standby of this primary. A throwaway
cluster on free ports under a temporary folder (never the shared one): its primary, a real
standby made by pg_basebackup -R, and a copy that is not replicating (pg_basebackup without
-R: the same system identifier, not in recovery). Before, the copy passed the freshness check
with its own positions, and a channel revoked on the primary kept reading there for ever."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.db import Database
from tests.conftest import free_port

BIN = Path("/usr/lib/postgresql/15/bin")
pytestmark = pytest.mark.needs_root  # a cluster of its own: the server's tools run as postgres


def as_postgres_command(*args: str) -> list[str]:
    """The server's tools refuse root: run them as postgres then."""
    return list(args) if os.getuid() != 0 else ["runuser", "-u", "postgres", "--", *args]


def as_postgres(*args: str) -> None:
    subprocess.run(as_postgres_command(*args), check=True, capture_output=True, timeout=60)


def start(data: Path, port: int, sockets: Path) -> None:
    options = (f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c shared_buffers=8MB -c max_connections=20 "
               "-c fsync=off -c max_wal_senders=4 -c wal_level=replica")
    as_postgres(str(BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data.parent / f"{data.name}.log"),
                "-w", "start")


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, int]]:
    """{primary, standby, copy}: their ports."""
    root = Path(tempfile.mkdtemp(prefix="insurance-standby-"))
    ports = {"primary": free_port(), "standby": free_port(), "copy": free_port()}
    started: list[Path] = []
    try:
        if os.getuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        primary = root / "primary"
        as_postgres(str(BIN / "initdb"), "-D", str(primary), "-U", "postgres", "--auth=trust", "-N")
        start(primary, ports["primary"], root)
        started.append(primary)
        for name, standby in (("standby", ["-R"]), ("copy", [])):
            as_postgres(str(BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(ports["primary"]), "-U", "postgres",
                        "-D", str(root / name), "-X", "stream", "-c", "fast", *standby)
            start(root / name, ports[name], root)
            started.append(root / name)
        yield ports
    finally:
        stops = [subprocess.Popen(as_postgres_command(str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                                      "stop"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for data in started]  # the three at once
        for stop in stops:
            stop.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


async def watched(primary: str, replica: str, seconds: float = 3.0) -> Database:
    """A Database whose replica has been watched until it serves or is refused, or for `seconds`."""
    db = Database(primary, min_size=1, max_size=2, read_dsn=replica, read_max_lag=1.0)
    await db.open()
    deadline = time.monotonic() + seconds
    while db.replica.replayed < 0 and getattr(db.replica, "refused", None) is None and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return db


def url(port: int) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


async def test_a_standby_of_the_primary_serves(cluster):
    db = await watched(url(cluster["primary"]), url(cluster["standby"]))
    try:
        assert db.replica.replayed >= 0 and db.replica.lag <= 1.0 and db.replica.refused is None
    finally:
        await db.close()


async def test_a_copy_that_is_not_replicating_is_refused(cluster):
    db = await watched(url(cluster["primary"]), url(cluster["copy"]))
    try:
        assert db.replica.replayed == -1, "a server not in recovery never serves reads"
        assert db.replica.refused == "not in recovery: not a standby"
    finally:
        await db.close()


async def test_a_standby_of_another_cluster_is_refused(cluster):
    shared = os.environ["ADMIN_DATABASE_URL"]  # another primary: its system identifier differs
    db = await watched(shared, url(cluster["standby"]))
    try:
        assert db.replica.replayed == -1
        assert db.replica.refused == "a standby of another cluster"
    finally:
        await db.close()


def test_read_max_lag_is_bounded_at_start():
    from app.config import Config, ConfigError
    for absurd in ("0", "-1", "3600", "1e9", "nan"):
        with pytest.raises(ConfigError, match="READ_MAX_LAG"):
            Config.from_env({"APP_ENV": "test", "READ_MAX_LAG": absurd})
    assert Config.from_env({"APP_ENV": "test", "READ_MAX_LAG": "60"}).read_max_lag == 60
