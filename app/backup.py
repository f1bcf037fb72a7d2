"""Backups and point-in-time restore on pgBackRest: WAL archived continuously, full and
differential backups, an encrypted repository outside the data directory.

The cluster is the one ADMIN_DATABASE_URL reaches (`make run`'s on 127.0.0.1:5432 unless told
otherwise); it must run on this machine, since pgBackRest reads its data directory. pgBackRest
and pg_ctl run as `postgres` (through runuser when this process is root). Every pgBackRest
call names the configuration `backup up` wrote (BACKUP_CONFIG), never pgBackRest's default.

- `up`: the configuration and the repository, `archive_command` and `archive_timeout` (a
  reload), `archive_mode = on` (a restart, announced on a line before it happens), the stanza,
  and a first full backup when the repository has none. Each step is skipped when done.
- `now`: one backup (full, diff or incr).
- `status`: the backups and the archiver's state as JSON; exit 1 when the newest backup is older
  than BACKUP_MAX_AGE or archiving has failed since its last success.
- `restore`: a side copy at a point in time in a new folder, started on its own port with
  `archive_mode = off` (it never archives into the live stanza); the live cluster is not touched.
- `recover_rows`: a channel's risk items, and what hangs from them, from a side copy back into
  the live database with their ids, in one transaction while the service serves.
"""
from __future__ import annotations

import datetime as dt
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import psycopg
from psycopg.rows import dict_row

from app.config import Config

OWNER = "postgres"  # the user of the cluster, pgBackRest and the repository


class BackupError(RuntimeError):
    """A step failed; the message says which and why (one line for the operator)."""


def say(line: str) -> None:
    print(f"[backup] {line}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ running as postgres

def as_owner(command: list[str]) -> list[str]:
    if pwd.getpwuid(os.geteuid()).pw_name == OWNER:
        return command
    if os.geteuid() == 0:
        return ["runuser", "-u", OWNER, "--", *command]
    return ["sudo", "-n", "-u", OWNER, *command]


def run_as_owner(command: list[str], timeout: float = 900, starts_server: bool = False) -> str:
    """`command` as postgres; its output. `starts_server`: the server it starts inherits no pipe
    of ours (we would wait for its end to read their end), its messages go to a file."""
    if starts_server:
        with tempfile.TemporaryFile("w+") as errors:
            done = subprocess.run(as_owner(command), check=False, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors,
                                  text=True, timeout=timeout)
            errors.seek(0)
            done.stdout, done.stderr = "", errors.read()
    else:
        done = subprocess.run(as_owner(command), check=False, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        detail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise BackupError(f"{' '.join(command[:3])}... exited {done.returncode}: "
                          f"{' / '.join(detail[-3:]) or 'no output'}")
    return done.stdout


def chown_owner(target: Path) -> None:
    entry = pwd.getpwnam(OWNER)
    os.chown(target, entry.pw_uid, entry.pw_gid)


# ------------------------------------------------------------------ the cluster

@dataclass(frozen=True)
class Cluster:
    """What the running cluster says about itself."""
    data_directory: Path
    config_file: Path
    hba_file: Path
    ident_file: Path
    port: int
    socket_dir: str
    version: int  # major
    settings: dict[str, str]

    @property
    def debian(self) -> str | None:
        """'15 main' for a Debian cluster (its configuration lives in /etc/postgresql)."""
        parts = self.config_file.parts
        if parts[:3] == ("/", "etc", "postgresql") and len(parts) >= 6:
            return f"{parts[3]} {parts[4]}"
        return None

    @property
    def bin(self) -> Path:
        return Path(f"/usr/lib/postgresql/{self.version}/bin")


INSPECTED = ("archive_mode", "archive_command", "archive_timeout", "shared_preload_libraries", "wal_level")


def admin_url_to(url: str, dbname: str | None = None, port: int | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if port is not None:
        user = netloc.rsplit("@", 1)[0] + "@" if "@" in netloc else ""
        netloc = f"{user}127.0.0.1:{port}"
    return urlunsplit((parts.scheme, netloc, f"/{dbname}" if dbname else parts.path, parts.query, ""))


def connect(url: str, **kwargs: Any) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10, **kwargs)


def inspect(config: Config) -> Cluster:
    try:
        conn = connect(config.admin_database_url)
    except psycopg.OperationalError as exc:
        raise BackupError(f"cannot connect to the cluster (ADMIN_DATABASE_URL): {str(exc).splitlines()[0]}") from None
    with conn:
        row = conn.execute(
            """SELECT current_setting('data_directory') AS data, current_setting('config_file') AS conf,
                      current_setting('hba_file') AS hba, current_setting('ident_file') AS ident,
                      current_setting('port')::int AS port,
                      current_setting('unix_socket_directories') AS sockets,
                      current_setting('server_version_num')::int / 10000 AS version""").fetchone()
        # pg_settings: the raw value (archive_timeout 60, not current_setting's '1min').
        settings = {r["name"]: r["setting"] or "" for r in conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", ([*INSPECTED, "cron.database_name"],))}
    sockets = [s.strip() for s in row["sockets"].split(",") if s.strip()]
    return Cluster(Path(row["data"]), Path(row["conf"]), Path(row["hba"]), Path(row["ident"]), row["port"],
                   sockets[0] if sockets else "/var/run/postgresql", row["version"], settings)


def wait_ready(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with connect(url) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise BackupError(f"the cluster did not accept connections within {timeout:.0f} s") from None
            time.sleep(0.2)


def restart(cluster: Cluster, config: Config) -> None:
    if cluster.debian:
        version, name = cluster.debian.split()
        command = ["pg_ctlcluster", "--mode=fast", version, name, "restart"]
    else:
        command = [str(cluster.bin / "pg_ctl"), "-D", str(cluster.data_directory), "restart", "-m", "fast",
                   "-w", "-t", "300", "-l", str(cluster.data_directory / "postmaster.log")]
    run_as_owner(command, starts_server=True)
    wait_ready(config.admin_database_url)


# ------------------------------------------------------------------ pgBackRest

def pgbackrest(config: Config, *args: str, timeout: float = 3600) -> str:
    if not shutil.which("pgbackrest"):
        raise BackupError("pgbackrest is not installed (make setup installs it)")
    return run_as_owner(["pgbackrest", f"--config={config.backup_config}", f"--stanza={config.backup_stanza}",
                         *args], timeout=timeout)


def archive_command(config: Config) -> str:
    return f"pgbackrest --config={config.backup_config} --stanza={config.backup_stanza} archive-push %p"


def existing_key(path: Path) -> str:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ""
    for line in text.splitlines():
        if line.startswith("repo1-cipher-pass="):
            return line.partition("=")[2].strip()
    return ""


def config_text(config: Config, cluster: Cluster, key: str) -> str:
    lines = ["# Written by `python -m app backup up` from the BACKUP_* settings (docs/configuration.md);",
             "# written again by the next `backup up`. It holds the repository's key: keep a copy elsewhere.",
             "[global]",
             f"repo1-path={config.backup_repo_path}",
             f"repo1-retention-full={config.backup_retention_full}",
             f"repo1-retention-diff={config.backup_retention_diff}",
             f"compress-type={config.backup_compress_type}",
             f"log-path={config.backup_log_path}",
             "start-fast=y",
             f"repo1-cipher-type={config.backup_cipher_type}"]
    if config.backup_cipher_type != "none":
        lines.append(f"repo1-cipher-pass={key}")
    lines += ["", f"[{config.backup_stanza}]",
              f"pg1-path={cluster.data_directory}",
              f"pg1-port={cluster.port}",
              f"pg1-socket-path={cluster.socket_dir}",
              f"pg1-user={OWNER}", ""]
    return "\n".join(lines)


def write_config(config: Config, cluster: Cluster) -> bool:
    """The pgBackRest configuration and the folders it names; True when the file changed. A key
    already in the file is kept (a new one would make the repository unreadable)."""
    path = config.backup_config
    if cluster.data_directory == config.backup_repo_path or \
            config.backup_repo_path.is_relative_to(cluster.data_directory):
        raise BackupError(f"BACKUP_REPO_PATH={config.backup_repo_path} lies inside the data directory "
                          f"{cluster.data_directory}: a lost cluster would take its backups with it")
    key = config.backup_cipher_pass or existing_key(path)
    if config.backup_cipher_type != "none" and not key:
        key = secrets.token_urlsafe(48)
        say(f"drew a repository key, kept in {path} only: copy it to your secret store (BACKUP_CIPHER_PASS)")
    text = config_text(config, cluster, key)
    for folder in (config.backup_repo_path, config.backup_log_path):
        if not folder.exists():
            folder.mkdir(parents=True, mode=0o750)
            chown_owner(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    chown_owner(tmp)
    os.replace(tmp, path)
    return True


def info(config: Config) -> dict:
    """pgBackRest's `info` of the stanza (a stanza without a repository yet: no backups)."""
    stanzas = orjson.loads(pgbackrest(config, "--output=json", "info", timeout=120) or "[]")
    return stanzas[0] if stanzas else {}


def up(config: Config) -> dict:
    cluster = inspect(config)
    say(f"cluster on port {cluster.port}, data {cluster.data_directory}; repository {config.backup_repo_path}, "
        f"stanza {config.backup_stanza}")
    if write_config(config, cluster):
        say(f"wrote {config.backup_config}")
    # The stanza before archiving starts: until it exists every archive_command call fails.
    pgbackrest(config, "stanza-create", timeout=300)  # a no-op when the stanza exists and matches
    wanted = archive_command(config)
    with connect(config.admin_database_url) as conn:
        changed = False
        if cluster.settings["archive_command"] != wanted:
            conn.execute(f"ALTER SYSTEM SET archive_command = '{wanted}'")
            changed = True
        if cluster.settings["archive_timeout"] != str(config.backup_archive_timeout):
            conn.execute(f"ALTER SYSTEM SET archive_timeout = {int(config.backup_archive_timeout)}")
            changed = True
        if changed:
            conn.execute("SELECT pg_reload_conf()")
            say("archive_command and archive_timeout set (reloaded)")
        restart_needed = cluster.settings["archive_mode"] not in ("on", "always")
        if restart_needed:
            conn.execute("ALTER SYSTEM SET archive_mode = on")
    if restart_needed:
        say(f"restarting PostgreSQL on port {cluster.port} ({cluster.data_directory}) once now: "
            "archive_mode = on needs a restart")
        restart(cluster, config)
    pgbackrest(config, "check", timeout=300)  # a WAL segment reaches the repository
    found = info(config)
    if not found.get("backup"):
        say("no backup in the repository yet: a full backup now")
        pgbackrest(config, "--type=full", "backup")
        found = info(config)
    say("archiving on; backups: " + ", ".join(b["label"] for b in found.get("backup", [])))
    return status(config)[0]


def now(config: Config, kind: str) -> dict:
    pgbackrest(config, f"--type={kind}", "backup")
    return describe(info(config).get("backup", [])[-1])


# ------------------------------------------------------------------ status

def _time(epoch: int | None) -> str | None:
    return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat()


def describe(backup: dict) -> dict:
    return {"label": backup["label"], "type": backup["type"],
            "start": _time(backup["timestamp"]["start"]), "end": _time(backup["timestamp"]["stop"]),
            "size": backup["info"]["size"], "repository_size": backup["info"]["repository"]["delta"],
            "wal_start": backup["archive"]["start"], "wal_stop": backup["archive"]["stop"],
            "error": backup.get("error", False)}


def archiver(config: Config) -> dict | None:
    try:
        with connect(config.admin_database_url) as conn:
            return conn.execute(
                """SELECT current_setting('archive_mode') AS archive_mode, archived_count, last_archived_wal,
                          last_archived_time, failed_count, last_failed_wal, last_failed_time,
                          extract(epoch FROM now() - last_archived_time)::float8 AS seconds_since_archived
                     FROM pg_stat_archiver""").fetchone()
    except psycopg.OperationalError:
        return None


def status(config: Config) -> tuple[dict, list[str]]:
    """The report and its problems (none: healthy)."""
    problems: list[str] = []
    try:
        found = info(config)
    except BackupError as exc:
        found, problems = {}, [f"pgBackRest: {exc}"]
    backups = [describe(b) for b in found.get("backup", [])]
    archive = archiver(config)
    if found.get("status", {}).get("code", 0) not in (0,):
        problems.append(f"stanza: {found['status'].get('message')}")
    if not backups:
        problems.append("no backup in the repository")
    else:
        newest = found["backup"][-1]["timestamp"]["stop"]
        age = time.time() - newest
        if age > config.backup_max_age:
            problems.append(f"the newest backup ended {age / 3600:.1f} h ago (BACKUP_MAX_AGE "
                            f"{config.backup_max_age / 3600:.1f} h)")
    if archive is None:
        problems.append("the cluster is unreachable: the archiver's state is unknown")
    else:
        if archive["archive_mode"] not in ("on", "always"):
            problems.append("archive_mode is off: WAL is not archived (python -m app backup up)")
        failed, archived = archive["last_failed_time"], archive["last_archived_time"]
        if failed is not None and (archived is None or failed > archived):
            problems.append(f"archiving failed at {failed.isoformat()} (WAL {archive['last_failed_wal']}) and "
                            "has not succeeded since")
    report = {"stanza": config.backup_stanza, "repository": str(config.backup_repo_path),
              "backups": backups,
              "wal": [{"min": a.get("min"), "max": a.get("max")} for a in found.get("archive", [])],
              "archiver": archive, "healthy": not problems, "problems": problems}
    return report, problems


# ------------------------------------------------------------------ restore

def parse_time(value: str) -> dt.datetime:
    """ISO 8601; without an offset it is UTC."""
    moment = dt.datetime.fromisoformat(value.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def restore(config: Config, moment: dt.datetime, target: Path, port: int) -> dict:
    """A side copy of the cluster as it was at `moment`, in `target`, running on `port`."""
    cluster = inspect(config)
    target = target.resolve()
    live = cluster.data_directory.resolve()
    if target == live or target.is_relative_to(live) or live.is_relative_to(target):
        raise BackupError(f"{target} is the live cluster's data directory or holds it: a restore goes beside it")
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} is not empty: a restore goes into a new folder")
    if not port_free(port):
        raise BackupError(f"port {port} is taken")
    started = time.monotonic()
    target.mkdir(parents=True, mode=0o700, exist_ok=True)
    chown_owner(target)
    stamp = moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f+00")
    pgbackrest(config, f"--pg1-path={target}", "--type=time", f"--target={stamp}", "--target-action=promote",
               "--archive-mode=off", "restore")
    restored_at = time.monotonic()
    write_side_settings(cluster, target, port)
    log = target / "side-copy.log"
    admin_url = admin_url_to(config.admin_database_url, port=port)
    try:
        run_as_owner([str(cluster.bin / "pg_ctl"), "-D", str(target), "-l", str(log), "-w", "-t", "600", "start"],
                     timeout=900, starts_server=True)
        wait_ready(admin_url)
        deadline = time.monotonic() + 600
        while True:  # the target reached and promoted: the copy takes writes
            with connect(admin_url) as conn:
                if not conn.execute("SELECT pg_is_in_recovery() AS r").fetchone()["r"]:
                    size = conn.execute("SELECT pg_database_size(current_database()) AS s").fetchone()["s"]
                    break
            if time.monotonic() > deadline:
                raise BackupError(f"the side copy did not reach its target within 600 s (see {log})")
            time.sleep(0.2)
    except (BackupError, psycopg.OperationalError) as exc:
        if "recovery ended before configured recovery target" in (log.read_text() if log.exists() else ""):
            raise BackupError(f"no WAL written after {moment.isoformat()} is archived yet, so recovery cannot tell "
                              "it reached that time: wait for the next segment (BACKUP_ARCHIVE_TIMEOUT) or run "
                              f"SELECT pg_switch_wal() on the live cluster, then remove {target} and restore "
                              "again") from None
        raise BackupError(f"the side copy did not start: {str(exc).splitlines()[0]} (see {log})") from None
    return {"url": admin_url, "data_directory": str(target), "port": port, "target": moment.isoformat(),
            "restore_seconds": round(restored_at - started, 2), "total_seconds": round(time.monotonic() - started, 2),
            "database_bytes": size}


def write_side_settings(cluster: Cluster, target: Path, port: int) -> None:
    """What a restored data directory needs to start beside the live cluster: its own port and
    socket, no archiving into the live stanza, and (Debian keeps them in /etc) a configuration
    and client rules of its own."""
    side: dict[str, str] = {"port": str(port), "listen_addresses": "127.0.0.1",
                            "unix_socket_directories": str(target), "archive_mode": "off",
                            "cluster_name": f"side-copy-{port}"}
    conf = target / "postgresql.conf"
    if not conf.exists():  # Debian: the live configuration is in /etc/postgresql
        for name in ("shared_preload_libraries", "cron.database_name", "wal_level"):
            if cluster.settings.get(name):
                side[name] = cluster.settings[name]
        conf.write_text("# A side copy restored by python -m app backup restore; settings in postgresql.auto.conf\n")
        chown_owner(conf)
    for name, source in (("hba_file", cluster.hba_file), ("ident_file", cluster.ident_file)):
        copy = target / source.name
        if not source.resolve().is_relative_to(cluster.data_directory.resolve()) or not copy.exists():
            shutil.copyfile(source, copy)
            chown_owner(copy)
        side[name] = str(copy)
    auto = target / "postgresql.auto.conf"
    lines = ["", "# python -m app backup restore: a side copy beside the live cluster"]
    lines += [f"{name} = '{value}'" for name, value in side.items()]
    with auto.open("a") as out:
        out.write("\n".join(lines) + "\n")
