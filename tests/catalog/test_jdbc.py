"""The JDBC catalog against real databases — SQLite files, a PostgreSQL and a MariaDB server started here — and Java
Paimon 0.9's own JdbcCatalog (in the bridge jar the harness uses; Debian's JDBC drivers): Java creates and writes
tables through its catalog, paimon-ops discovers exactly those (never an unregistered directory), maintains them
through the CLI, and Java reads identical rows and keeps committing. The lock row in `paimon_distributed_locks` is
honoured both ways and never left behind (errors, a lock timeout, SIGTERM of the CLI); bad input is one line naming
the endpoint or table, exit 2, nothing changed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from paimon_ops.catalog import open_catalog
from paimon_ops.errors import CatalogError, LockTimeoutError, TableNotFoundError
from tests.catalog import servers
from tests.catalog.conftest import sqlite_catalog_db
from tests.cli.conftest import REPO, cli
from tests.net import free_port, patient

FIELDS = [("dt", "STRING"), ("k", "INT NOT NULL"), ("v", "STRING")]
FAST_LOCK = {"lock-check-max-sleep": "200 ms"}


@dataclass
class JdbcSetup:
    """One catalog database, seen by paimon-ops (`options`) and by Java 0.9 (`java_options`, `jars`)."""

    dialect: str
    warehouse: Path
    options: dict[str, str]
    java_options: dict[str, str]
    jars: list[str]
    sql: Callable[[str, tuple], list]  # run SQL on the catalog database (from outside both)
    java_locks: bool = True  # Java 0.9 has lock dialects for SQLite and MySQL only
    extra: dict[str, Any] = field(default_factory=dict)

    def flags(self, **more: str) -> list[str]:
        out = []
        for k, v in {**self.options, **more}.items():
            out += ["-o", f"{k}={v}"]
        return out

    def java_table(self, name: str):
        from tests.interop.java_harness import JavaTable
        db, t = name.split(".")
        return JavaTable(self.warehouse, db, t, catalog_options=self.java_options, extra_classpath=self.jars)

    def lock_rows(self) -> list:
        return self.sql("SELECT lock_id FROM paimon_distributed_locks", ())

    def hold_lock(self, lock_id: str, seconds: int = 3600) -> None:
        self.sql("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, ?)",
                 (lock_id, seconds))

    def release_lock(self, lock_id: str) -> None:
        self.sql("DELETE FROM paimon_distributed_locks WHERE lock_id = ?", (lock_id,))


def _sqlite_sql(path: Path) -> Callable[[str, tuple], list]:
    def run(q: str, args: tuple) -> list:
        c = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            return c.execute(q, args).fetchall()
        finally:
            c.close()
    return run


def _server_sql(server) -> Callable[[str, tuple], list]:
    def run(q: str, args: tuple) -> list:
        c = server.connect()
        try:
            cur = c.cursor()
            cur.execute(q.replace("?", "%s"), args)
            return list(cur.fetchall()) if cur.description else []
        finally:
            c.close()
    return run


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def jdbc(request, tmp_path, java) -> JdbcSetup:
    key = f"k{abs(hash(request.node.nodeid)) % 10**8}"  # a catalog of its own in a shared server
    wh = tmp_path / "wh"
    wh.mkdir()
    if request.param == "sqlite":
        jar = servers.first_file(servers.SQLITE_JDBC_JARS)
        if jar is None:
            pytest.skip("Debian's libxerial-sqlite-jdbc-java is not installed (dev.sh installs it)")
        db = tmp_path / "catalog.db"
        uri = sqlite_catalog_db(db)
        opts = {"metastore": "jdbc", "uri": uri, "catalog-key": key, "lock.enabled": "true", **FAST_LOCK}
        return JdbcSetup("sqlite", wh, opts, dict(opts), [jar], _sqlite_sql(db))
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres")
        jar = servers.first_file(servers.POSTGRES_JDBC_JARS)
        if jar is None:
            pytest.skip("Debian's libpostgresql-jdbc-java is not installed (dev.sh installs it)")
        opts = {**server.options(), "catalog-key": key, "lock.enabled": "true", **FAST_LOCK}
        # Java 0.9 has no PostgreSQL lock dialect ("Distributed locks based on postgresql are not supported")
        return JdbcSetup("postgresql", wh, opts, {**opts, "lock.enabled": "false"}, [jar], _server_sql(server),
                         java_locks=False)
    server = request.getfixturevalue("mariadb")
    jar = servers.first_file(servers.MARIADB_JDBC_JARS)
    if jar is None:
        pytest.skip("Debian's libmariadb-java is not installed (dev.sh installs it)")
    opts = {**server.options(), "catalog-key": key, "lock.enabled": "true", **FAST_LOCK}
    return JdbcSetup("mariadb", wh, opts, dict(opts), [jar], _server_sql(server))


def _java_tables(s: JdbcSetup) -> tuple[Any, Any]:
    orders = s.java_table("shop.orders")
    orders.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "k"],
                  options={"bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "100",
                           "snapshot.time-retained": "1 ms"})
    for i in range(4):
        orders.write([{"rows": [[f"2024-01-0{1 + i % 2}", k, f"v{i}-{k}"] for k in range(i, i + 5)]}])
    events = s.java_table("shop.events")
    events.create([("k", "INT"), ("v", "STRING")], options={"bucket": "-1"})
    for i in range(3):
        events.write([{"rows": [[i * 10 + k, f"e{k}"] for k in range(4)]}])
    return orders, events


def test_java_catalog_tables_are_discovered_maintained_and_read_back_by_java(jdbc: JdbcSetup):
    orders, events = _java_tables(jdbc)
    # an unregistered table directory (a dropped table's leftovers, a copy) is no table of this catalog
    shutil.copytree(orders.path, jdbc.warehouse / "shop.db" / "ghost")
    r = cli("tables", jdbc.warehouse, *jdbc.flags(), "--json")
    assert r.code == 0, r.err
    assert [row["table"] for row in r.json["rows"]] == ["shop.events", "shop.orders"]
    assert cli("tables", jdbc.warehouse, "--json").json["rows"][1]["table"] == "shop.ghost"  # (the directory view)
    r = cli("compact", jdbc.warehouse, "shop.ghost", *jdbc.flags())
    assert r.code == 2 and "not registered under catalog-key" in r.err

    rows_before = orders.rows(), events.rows()
    for args in (["compact", "shop.*", "--local"], ["create-tag", "shop.orders", "before"],
                 ["expire-snapshots", "shop.*", "--retain-min", "1", "--retain-max", "1"],
                 ["create-tag", "shop.orders", "after"], ["delete-tag", "shop.orders", "before"],
                 ["remove-orphans", "shop.*", "--min-age", "0 s", "--allow-short"]):
        r = cli(args[0], jdbc.warehouse, *args[1:], *jdbc.flags())
        assert r.code == 0, (args, r.out, r.err)
    assert (orders.rows(), events.rows()) == rows_before
    assert orders.rows(tag="after") == rows_before[0]
    snaps = orders.snapshots()
    assert snaps["tags"].keys() == {"after"} and snaps["earliest"] == snaps["latest"]
    files = orders.scan()["files"]
    assert files and all(f["level"] > 0 for f in files)  # compacted
    # Java keeps committing through its catalog (and its lock) after paimon-ops' commits
    orders.write([{"rows": [["2024-01-03", 99, "late"]]}])
    assert ["2024-01-03", 99, "late"] in orders.rows()
    assert jdbc.lock_rows() == []  # nothing left held


@pytest.mark.parametrize("jdbc", ["sqlite"], indirect=True)
def test_table_patterns_in_worker_processes_go_through_the_catalog_and_its_lock(jdbc: JdbcSetup):
    """`--parallel 2` over Java's JdbcCatalog on a SQLite file: each worker process opens its own connection (forked
    before the command touched the catalog), every commit takes the table's lock row — a held row fails only its
    table — and Java reads the same rows and keeps committing."""
    orders, events = _java_tables(jdbc)
    rows_before = orders.rows(), events.rows()
    jdbc.hold_lock(_lock_id(jdbc, "shop.orders"))
    r = cli("compact", jdbc.warehouse, "shop.*", "--local", "--parallel", "2", "--json",
            *jdbc.flags(**{"lock-acquire-timeout": "1 s"}))
    assert r.code == 2 and r.json["failed"] == ["shop.orders"], (r.out, r.err)
    assert [t["status"] for t in r.json["tables"]] == ["ok", "failed"]
    assert "lock of table shop.orders" in r.json["tables"][1]["error"]["message"]
    jdbc.release_lock(_lock_id(jdbc, "shop.orders"))
    for args in (["compact", "shop.*", "--local"], ["expire-snapshots", "shop.*", "--retain-min", "1", "--retain-max", "1"]):
        r = cli(args[0], jdbc.warehouse, *args[1:], "--parallel", "2", "--json", *jdbc.flags())
        assert r.code == 0, (args, r.out, r.err)
        assert [(t["table"], t["status"]) for t in r.json["tables"]] == [("shop.events", "ok"), ("shop.orders", "ok")]
    assert (orders.rows(), events.rows()) == rows_before
    snaps = orders.snapshots()
    assert snaps["earliest"] == snaps["latest"]
    assert all(f["level"] > 0 for f in orders.scan()["files"])  # compacted
    assert jdbc.lock_rows() == []  # no worker left its row held
    orders.write([{"rows": [["2024-01-03", 99, "late"]]}])
    assert ["2024-01-03", 99, "late"] in orders.rows()


def _files(root: Path) -> list[str]:
    """The table's files (the executor's empty journal directory aside)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _lock_id(s: JdbcSetup, table: str) -> str:
    return f"{s.options['catalog-key']}.{table}"


def test_a_paimon_ops_commit_waits_while_the_lock_row_is_held(jdbc: JdbcSetup):
    orders, _ = _java_tables(jdbc)
    before = orders.snapshots()["latest"]
    lock = _lock_id(jdbc, "shop.orders")
    jdbc.hold_lock(lock)
    proc = subprocess.Popen([sys.executable, "-m", "paimon_ops.cli", "compact", str(jdbc.warehouse), "shop.orders",
                             "--local", *jdbc.flags()], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + patient(20)
        while time.monotonic() < deadline and jdbc.sql("SELECT COUNT(*) FROM paimon_distributed_locks", ())[0][0] < 1:
            time.sleep(0.2)
        time.sleep(3)  # planning and the rewrite are done long before: the commit waits for the row
        assert proc.poll() is None, proc.communicate()
        assert orders.snapshots()["latest"] == before
        released = time.time()
        jdbc.release_lock(lock)
        out, err = proc.communicate(timeout=patient(60))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert orders.snapshots()["latest"] == before + 1
    assert (orders.path / "snapshot" / f"snapshot-{before + 1}").stat().st_mtime >= released - 1  # made after
    assert jdbc.lock_rows() == []


def test_java_commit_waits_while_paimon_ops_holds_the_lock(jdbc: JdbcSetup):
    """While paimon-ops holds the row, Java's commit waits (on PostgreSQL, where Java 0.9 has no lock dialect, another
    paimon-ops process is the waiting writer)."""
    from tests.interop.java_harness import jvm_command
    orders, _ = _java_tables(jdbc)
    before = orders.snapshots()["latest"]
    cat = open_catalog(str(jdbc.warehouse), jdbc.options)
    table = cat.get_table("shop.orders")
    if jdbc.java_locks:
        cmd, stdin = jvm_command("write", jdbc.jars), json.dumps(orders.payload(batches=[{"rows": [
            ["2024-01-05", 1, "java"]]}]))
    else:
        cmd, stdin = [sys.executable, "-m", "paimon_ops.cli", "compact", str(jdbc.warehouse), "shop.orders",
                      "--local", *jdbc.flags()], ""
    with cat.lock(table):
        assert jdbc.lock_rows() == [(_lock_id(jdbc, "shop.orders"),)]
        writer = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=REPO)
        writer.stdin.write(stdin)
        writer.stdin.close()
        time.sleep(patient(3))
        assert writer.poll() is None, writer.stderr.read()[-2000:]
        assert orders.snapshots()["latest"] == before  # the other writer is waiting for our row
        released = time.time()
    try:
        assert writer.wait(timeout=patient(60)) == 0, writer.stderr.read()[-2000:]
    finally:
        if writer.poll() is None:
            writer.kill()
    assert orders.snapshots()["latest"] == before + 1
    assert (orders.path / "snapshot" / f"snapshot-{before + 1}").stat().st_mtime >= released - 1
    assert jdbc.lock_rows() == []
    cat.close()


def test_a_lock_timeout_is_one_line_naming_the_table_and_changes_nothing(jdbc: JdbcSetup):
    orders, _ = _java_tables(jdbc)
    lock = _lock_id(jdbc, "shop.orders")
    jdbc.hold_lock(lock)
    files = _files(orders.path)
    r = cli("compact", jdbc.warehouse, "shop.orders", "--local", *jdbc.flags(**{"lock-acquire-timeout": "2 s"}),
            "--json")
    assert r.code == 2
    line = r.err.strip()
    assert "\n" not in line and "shop.orders" in line and "lock-acquire-timeout" in line and lock in line
    assert r.json["error"]["type"] == "LockTimeoutError" and r.json["error"]["endpoint"]
    assert r.seconds < patient(30)
    assert _files(orders.path) == files  # what the attempt wrote was removed
    assert jdbc.lock_rows() == [(lock,)]  # the other writer's row is untouched, and no row of ours is left
    jdbc.release_lock(lock)


_DRIVER = textwrap.dedent("""
    import os, sys, time
    from paimon_ops.table import table as t
    original = t.SnapshotManager.commit
    def commit(self, snapshot, tmp_token=None):
        open(os.environ["MARK"], "w").close()   # the catalog's lock is held now
        if os.environ["MODE"] == "hang":
            time.sleep(600)
        raise OSError("injected: the disk went away")
    t.SnapshotManager.commit = commit
    from paimon_ops.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("mode", ["hang", "fail"])
def test_sigterm_or_an_error_while_holding_the_lock_releases_it(jdbc: JdbcSetup, tmp_path, mode):
    """A real CLI process (its commit made to stop inside the lock: hanging until SIGTERM, or failing)."""
    orders, _ = _java_tables(jdbc)
    before = orders.snapshots()["latest"]
    mark = tmp_path / "locked"
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, "compact", str(jdbc.warehouse), "shop.orders", "--local",
                             *jdbc.flags()], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "MARK": str(mark), "MODE": mode})
    try:
        deadline = time.monotonic() + patient(60)
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mark.exists(), proc.communicate()
        if mode == "hang":
            assert jdbc.lock_rows() == [(_lock_id(jdbc, "shop.orders"),)]
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=patient(30))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if mode == "hang" else 2), err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("paimon-ops: "), err  # (progress above)
    assert jdbc.lock_rows() == []
    assert orders.snapshots()["latest"] == before
    assert orders.rows()  # still readable by Java


# ---------------------------------------------------------------------------------------------- bad input
def test_unreachable_database_wrong_credentials_and_missing_files_are_one_line(tmp_path, postgres):
    wh = tmp_path / "wh"
    wh.mkdir()
    port = free_port()
    cases = [
        ({"metastore": "jdbc", "uri": f"jdbc:postgresql://127.0.0.1:{port}/x"}, f"127.0.0.1:{port}"),
        ({**postgres.options(), "jdbc.password": "wrong-password"}, postgres.uri),
        ({"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/missing.db"}, "missing.db"),
        ({"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/empty.db"}, "not a Paimon JDBC catalog"),
        ({"metastore": "jdbc"}, "uri"),
        ({"metastore": "jdbc", "uri": "jdbc:oracle:thin:@h:1521:x"}, "sqlite, postgresql, mysql or mariadb"),
    ]
    sqlite3.connect(tmp_path / "empty.db").close()
    for options, named in cases:
        flags = [x for k, v in options.items() for x in ("-o", f"{k}={v}")]
        r = cli("compact", wh, "db.t", *flags, "--connect-timeout", "3", "--json")
        assert r.code == 2, (options, r.err)
        line = r.err.strip()
        assert "\n" not in line and named in line, (options, line)
        assert "wrong-password" not in r.err + r.out
        assert r.seconds < patient(15), (options, r.seconds)
    assert not (tmp_path / "missing.db").exists()  # never created
    assert list(wh.iterdir()) == []


def test_the_catalog_api_on_each_database(jdbc: JdbcSetup):
    """Discovery, locations and the lock through the Python API, and errors naming the table."""
    _java_tables(jdbc)
    with open_catalog(str(jdbc.warehouse), jdbc.options) as cat:
        assert cat.databases() == ["shop"] and cat.tables("shop") == ["events", "orders"]
        assert cat.table_location("shop.orders") == str(jdbc.warehouse / "shop.db" / "orders")
        with pytest.raises(TableNotFoundError, match="shop.nope"):
            cat.get_table("shop.nope")
        t = cat.get_table("shop.orders")
        with cat.lock(t):
            with pytest.raises(LockTimeoutError, match="shop.orders"):
                cat2 = open_catalog(str(jdbc.warehouse), {**jdbc.options, "lock-acquire-timeout": "500 ms"})
                try:
                    cat2.acquire_lock(cat2.get_table("shop.orders"))
                finally:
                    cat2.close()
        assert jdbc.lock_rows() == []
        # a timed-out row (its writer gone) is cleared, as Java does
        jdbc.hold_lock(_lock_id(jdbc, "shop.orders"), seconds=0)
        time.sleep(1.5)
        with cat.lock(t):
            pass
        assert jdbc.lock_rows() == []
    with pytest.raises(CatalogError):
        cat.all_tables()  # closed


def test_dagster_and_the_facade_list_exactly_the_registered_tables(tmp_path):
    """The Dagster component / resource and po.Catalog take the same catalog options: one asset per registered table,
    none for an unregistered directory (Java's registry DDL on a SQLite file; our own writer makes the tables)."""
    import paimon_ops as po
    from paimon_ops.dagster.factory import build_paimon_definitions, load_specs
    from paimon_ops.dagster.resources import PaimonWarehouse
    from paimon_ops.table.writer import create_table, write_rows
    wh = tmp_path / "wh"
    uri = sqlite_catalog_db(tmp_path / "catalog.db")
    for name in ("shop.orders", "shop.ghost", "ops.audit"):
        t = create_table(str(wh), name, [("k", "INT"), ("v", "STRING")], options={"bucket": "-1"})
        write_rows(t, {"k": [1], "v": ["a"]})
    run = _sqlite_sql(tmp_path / "catalog.db")
    run("CREATE TABLE paimon_tables(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,"
        "table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))", ())
    for db, t in (("shop", "orders"), ("ops", "audit")):
        run("INSERT INTO paimon_tables (catalog_key, database_name, table_name) VALUES (?,?,?)", ("jdbc", db, t))
    opts = {"metastore": "jdbc", "uri": uri}
    assert [s.identifier for s in load_specs(PaimonWarehouse(uri=str(wh), catalog_options=opts))] == [
        "ops.audit", "shop.orders"]
    defs = build_paimon_definitions(str(wh), catalog_options=opts)
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert any("orders" in k for k in keys) and any("audit" in k for k in keys) and not any("ghost" in k for k in keys)
    with po.Catalog(str(wh), options={**opts, "snapshot.num-retained.min": "3"}) as cat:
        assert cat.tables() == ["ops.audit", "shop.orders"] and cat.metastore == "jdbc"
        t = cat.get_table("shop.orders")
        assert t.options["snapshot.num-retained.min"] == "3" and t.raw.catalog.metastore == "jdbc"
        plan = t.maintenance.compact_manifests()
        assert plan.catalog["uri"] == uri and plan.catalog["metastore"] == "jdbc"


def _registered_sqlite_tables(tmp_path: Path, names: tuple[str, ...]) -> tuple[Path, str]:
    """Tables made by our own writer, registered as Java's JdbcCatalog registers them (its DDL), in a SQLite file."""
    from paimon_ops.table.writer import create_table, write_rows
    wh = tmp_path / "wh"
    uri = sqlite_catalog_db(tmp_path / "catalog.db")
    run = _sqlite_sql(tmp_path / "catalog.db")
    run("CREATE TABLE paimon_tables(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,"
        "table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))", ())
    for name in names:
        t = create_table(str(wh), name, [("k", "INT"), ("v", "STRING")], options={"bucket": "-1"})
        for i in range(3):
            write_rows(t, {"k": [i], "v": ["a"]})
        run("INSERT INTO paimon_tables (catalog_key, database_name, table_name) VALUES (?,?,?)",
            ("jdbc", *name.split(".")))
    return wh, uri


def test_apply_reopens_a_saved_plan_through_its_catalog(tmp_path):
    wh, uri = _registered_sqlite_tables(tmp_path, ("shop.orders",))
    flags = ["-o", "metastore=jdbc", "-o", f"uri={uri}", "-o", "lock.enabled=true"]
    r = cli("compact", wh, "shop.orders", *flags, "--dry-run", "--json")
    assert r.code == 0, r.err
    plan = tmp_path / "plan.json"
    plan.write_text(r.out)
    assert json.loads(r.out)["catalog"] == {"metastore": "jdbc", "uri": uri, "lock.enabled": "true",
                                           "warehouse": str(wh)}
    run = _sqlite_sql(tmp_path / "catalog.db")
    run("CREATE TABLE paimon_distributed_locks(lock_id VARCHAR(255) NOT NULL,acquired_at TIMESTAMP DEFAULT "
        "CURRENT_TIMESTAMP NOT NULL,expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))", ())
    run("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, ?)", ("jdbc.shop.orders", 600))
    # the plan's commit goes through the catalog it was made in: it waits for the held row, and gives up
    r = cli("apply", plan, "-o", "lock-acquire-timeout=1 s", "-o", "lock-check-max-sleep=100 ms")
    assert r.code == 2 and "lock of table shop.orders" in r.err, r.err
    run("DELETE FROM paimon_distributed_locks", ())
    r = cli("apply", plan, "--json")
    assert r.code == 0, r.err
    assert r.json["snapshot_id"] == 4
    assert run("SELECT COUNT(*) FROM paimon_distributed_locks", ()) == [(0,)]
