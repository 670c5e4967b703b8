"""The catalog abstraction on real tables: every snapshot and schema commit paimon-ops makes goes through the
table's catalog (and its lock), the latest snapshot comes from a catalog that owns the history, saved plans re-open
their table through the catalog, and tables with metastore-synced partitions or tags are refused through a catalog
that cannot keep the metastore in step ("without a catalog")."""
from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.catalog import Catalog, open_catalog, wait_for_lock
from paimon_ops.catalog.filesystem import FileSystemCatalog
from paimon_ops.errors import LockTimeoutError, UnsupportedError
from paimon_ops.execution.plan import Plan
from paimon_ops.table.writer import create_table, write_rows
from tests.cli.conftest import cli

FIELDS = [("dt", "STRING"), ("k", "INT"), ("v", "STRING")]


def table_with_history(warehouse: str, name: str = "db.t", options: dict | None = None):
    t = create_table(warehouse, name, FIELDS, ["dt"], ["dt", "k"], {"bucket": "1", **(options or {})})
    for day in ("2020-01-01", "2020-01-02", "2020-01-02"):
        write_rows(t, {"dt": [day] * 3, "k": [1, 2, 3], "v": ["a", "b", "c"]})
    return t


class Recording(FileSystemCatalog):
    """A real backend (the filesystem one) that records what the engine asks of it and holds a real lock (a
    threading lock, so that a second holder would block)."""

    syncs_metastore = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls: list[tuple] = []
        self.held = threading.Lock()
        self.lock_on = True

    @property
    def lock_enabled(self) -> bool:
        return self.lock_on

    def acquire_lock(self, table):
        assert self.held.acquire(timeout=5), "the lock was left held"
        self.calls.append(("acquire", table.identifier))
        return "handle"

    def release_lock(self, table, handle):
        assert handle == "handle"
        self.calls.append(("release", table.identifier))
        self.held.release()

    def commit_snapshot(self, table, commit):
        won = super().commit_snapshot(table, commit)
        self.calls.append(("commit_snapshot", commit.snapshot.id, commit.snapshot.commit_kind,
                           commit.base_snapshot.id if commit.base_snapshot else None,
                           tuple(sorted(json.dumps(dict(s.spec)) for s in commit.statistics)),
                           tuple(json.dumps(dict(p)) for p in commit.added_partitions), won))
        return won

    def commit_schema(self, table, schema):
        self.calls.append(("commit_schema", schema.id))
        return super().commit_schema(table, schema)

    def add_partitions(self, table, partitions):
        self.calls.append(("add_partitions", tuple(json.dumps(dict(p)) for p in partitions)))

    def drop_partitions(self, table, partitions):
        self.calls.append(("drop_partitions", tuple(json.dumps(dict(p)) for p in partitions)))

    def tag_created(self, table, name):
        self.calls.append(("tag_created", name))

    def tag_deleted(self, table, name):
        self.calls.append(("tag_deleted", name))

    def kinds(self) -> list[str]:
        return [c[0] for c in self.calls]


def test_default_catalog_is_the_filesystem_and_discovers_as_before(warehouse):
    table_with_history(warehouse, "db.t")
    table_with_history(warehouse, "other.u")
    cat = open_catalog(warehouse)
    assert isinstance(cat, FileSystemCatalog) and cat.metastore == "filesystem"
    assert cat.all_tables() == ["db.t", "other.u"]
    t = cat.get_table("db.t")
    assert t.catalog is cat and t.snapshots.latest_id() == 3
    assert cat.recorded_options() == {}  # a filesystem plan re-opens by its location
    # po.Catalog splits one mapping: catalog options to the catalog, the rest are table overrides
    pc = po.Catalog(warehouse, options={"metastore": "filesystem", "snapshot.num-retained.min": "7"})
    assert pc.tables() == ["db.t", "other.u"] and pc.metastore == "filesystem"
    assert pc.get_table("db.t").options["snapshot.num-retained.min"] == "7"
    assert "metastore" not in pc.get_table("db.t").options


def test_every_commit_goes_through_the_catalog_under_its_lock(warehouse):
    table_with_history(warehouse, "db.t", {"metastore.partitioned-table": "true"})
    cat = Recording(warehouse)
    t = po.Table(cat.get_table("db.t"))
    t.maintenance.compact(mode="full").execute()
    commit = next(c for c in cat.calls if c[0] == "commit_snapshot")
    assert commit[1:4] == (4, "COMPACT", 3) and commit[-1] is True
    assert commit[4] == ('{"dt": "2020-01-01"}', '{"dt": "2020-01-02"}')  # per-partition statistics
    # the snapshot file was created while the lock was held, and the metastore heard of the partitions after
    assert cat.kinds()[:4] == ["acquire", "release", "add_partitions", "commit_snapshot"]
    assert next(c for c in cat.calls if c[0] == "add_partitions")[1] == commit[5]
    assert not cat.held.locked()

    cat.calls.clear()
    t.maintenance.compact_manifests().execute()
    assert "commit_snapshot" in cat.kinds() and cat.kinds().count("acquire") == cat.kinds().count("release")

    cat.calls.clear()
    t.maintenance.expire_partitions(expiration_time=timedelta(days=1)).execute()
    kinds = cat.kinds()
    # the metastore first (as Java), then the OVERWRITE commit, under the lock
    assert kinds.index("drop_partitions") < kinds.index("commit_snapshot")
    drop = next(c for c in cat.calls if c[0] == "drop_partitions")
    assert drop[1] == ('{"dt": "2020-01-01"}', '{"dt": "2020-01-02"}')
    assert next(c for c in cat.calls if c[0] == "commit_snapshot")[2] == "OVERWRITE"
    assert not cat.held.locked()


def test_rescale_schema_commit_and_tags_go_through_the_catalog(warehouse):
    table_with_history(warehouse, "db.t", {"metastore.tag-to-partition": "tag_dt"})
    cat = Recording(warehouse)
    t = po.Table(cat.get_table("db.t"))
    t.maintenance.rescale(bucket_num=2).execute()
    assert ("commit_schema", 1) in cat.calls
    assert cat.kinds().count("acquire") == cat.kinds().count("release") >= 2  # schema and snapshot
    cat.calls.clear()
    t = po.Table(cat.get_table("db.t"))
    t.tags.create("t1").execute()
    t.tags.create("t2").execute()
    t.tags.rename("t2", "t3").execute()
    t.maintenance.delete_tags(["t1"]).execute()
    assert [c for c in cat.calls if c[0].startswith("tag_")] == [
        ("tag_created", "t1"), ("tag_created", "t2"), ("tag_created", "t3"), ("tag_deleted", "t2"),
        ("tag_deleted", "t1")]


def test_the_lock_is_released_when_the_commit_fails_or_is_interrupted(warehouse):
    table_with_history(warehouse, "db.t")
    cat = Recording(warehouse)
    t = cat.get_table("db.t")
    for exc in (OSError("disk gone"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with cat.lock(t):
                raise exc
        assert not cat.held.locked()
    assert cat.kinds() == ["acquire", "release"] * 2


def test_a_catalog_owning_the_history_gives_the_latest_snapshot_and_gets_no_hint(warehouse):
    table_with_history(warehouse, "db.t")

    class Owning(FileSystemCatalog):
        supports_version_management = True
        asked = 0

        def latest_snapshot(self, table):
            Owning.asked += 1
            return table.snapshots.snapshot(2)  # the server says 2, whatever the files say

    cat = Owning(warehouse)
    t = cat.get_table("db.t")
    assert t.snapshots.latest_id() == 2 and t.snapshots.latest().id == 2 and Owning.asked == 2
    assert t.snapshots.latest_id_from_files() == 3


def test_saved_plan_records_the_catalog_without_secrets_and_apply_reopens_through_it(warehouse):
    table_with_history(warehouse, "db.t")

    class Jdbcish(Recording):
        metastore = "jdbc"

    cat = Jdbcish(warehouse, {"uri": "jdbc:sqlite:/nowhere", "jdbc.password": "s3cret", "catalog-key": "k"})
    plan = po.Table(cat.get_table("db.t")).maintenance.compact(mode="full")
    assert plan.catalog == {"warehouse": warehouse, "uri": "jdbc:sqlite:/nowhere", "catalog-key": "k",
                            "metastore": "jdbc"}
    assert "s3cret" not in plan.to_json()
    loaded = Plan.from_json(plan.to_json())
    assert loaded.catalog == plan.catalog


def test_wait_for_lock_backs_off_as_java_and_names_the_table():
    now = [0.0]
    pauses: list[float] = []

    def sleep(s: float) -> None:
        pauses.append(round(s, 3))
        now[0] += s

    with pytest.raises(LockTimeoutError, match=r"db\.t .*within 2 s.*lock-acquire-timeout.*held by x"):
        wait_for_lock(lambda: None, endpoint="jdbc:sqlite:x", table="db.t", timeout=timedelta(seconds=2),
                      max_sleep=timedelta(milliseconds=500), holder=lambda: "held by x", clock=lambda: now[0],
                      sleep=sleep)
    assert pauses[:4] == [0.1, 0.2, 0.4, 0.5] and sum(pauses) == pytest.approx(2.0)
    tries = iter([None, None, "got"])
    assert wait_for_lock(lambda: next(tries), endpoint="e", table="db.t", timeout=timedelta(seconds=9),
                         max_sleep=timedelta(seconds=8), sleep=lambda s: None) == "got"


def test_backends_refuse_what_they_cannot_do_in_one_line(warehouse):
    with pytest.raises(po.PaimonOpsError, match="lock.enabled.*filesystem catalog has no lock"):
        open_catalog(warehouse, {"lock.enabled": "true"})
    with pytest.raises(po.PaimonOpsError, match="metastore.*one of filesystem, hive, jdbc, rest"):
        open_catalog(warehouse, {"metastore": "glue"})
    table_with_history(warehouse, "db.t")
    t = open_catalog(warehouse).get_table("db.t")
    with pytest.raises(UnsupportedError, match="no rollback of its own"):
        t.catalog.rollback_to(t, snapshot_id=1)
    assert isinstance(t.catalog, Catalog)


# ---------------------------------------------------------------------------------------------- without a catalog
@pytest.mark.parametrize("option,command,args", [
    ("metastore.partitioned-table=true", "expire-partitions", ["--expiration-time", "1 d"]),
    ("metastore.tag-to-partition=tag_dt", "create-tag", ["t9"]),
    ("metastore.tag-to-partition=tag_dt", "delete-tag", ["t0"]),
    ("metastore.tag-to-partition=tag_dt", "expire-tags", []),
    ("metastore.tag-to-partition=tag_dt", "rename-tag", ["t0", "t1"]),
    ("metastore.tag-to-partition=tag_dt", "auto-tag", []),
])
def test_metastore_synced_tables_are_refused_without_their_catalog(warehouse, option, command, args):
    key, value = option.split("=")
    extra = {"tag.automatic-creation": "process-time", "tag.creation-period": "daily"} if command == "auto-tag" else {}
    t = table_with_history(warehouse, "db.t", {key: value, **extra})
    if command in ("delete-tag", "rename-tag"):
        po.Table.open(t.location, options={"metastore.allow-out-of-sync": "true"}).tags.create("t0").execute()
    before = sorted(p.name for p in Path(t.root).rglob("*"))
    r = cli(command, warehouse, "db.t", *args, "--json")
    assert r.code == 2, r.out + r.err
    line = r.err.strip()
    assert "\n" not in line and key in line and f"{key}={value}" in line
    assert "metastore=hive" in line and "metastore.allow-out-of-sync=true" in line
    assert r.json["error"]["type"] == "UnsupportedError"
    assert sorted(p.name for p in Path(t.root).rglob("*")) == before  # nothing changed
    # the explicit override maintains it, leaving the metastore out of step
    r = cli(command, warehouse, "db.t", *args, "-o", "metastore.allow-out-of-sync=true")
    assert "metastore" not in r.err, r.err


def test_the_refusal_is_the_same_through_python_and_for_a_table_opened_by_location(warehouse):
    t = table_with_history(warehouse, "db.t", {"metastore.partitioned-table": "true"})
    with pytest.raises(UnsupportedError, match="expire_partitions refused on db.t: its option "
                                               "metastore.partitioned-table=true"):
        po.Catalog(warehouse).get_table("db.t").maintenance.expire_partitions(expiration_time=timedelta(days=1))
    with pytest.raises(UnsupportedError, match="opened by its location"):
        po.Table.open(t.location).maintenance.expire_partitions(expiration_time=timedelta(days=1))
    plan = po.Table.open(t.location, options={"metastore.allow-out-of-sync": "true"}).maintenance.expire_partitions(
        expiration_time=timedelta(days=1))
    assert len(plan.expired_partitions) == 2
    # operations that do not touch what the metastore lists are not refused
    po.Catalog(warehouse).get_table("db.t").maintenance.compact(mode="full").execute()


def test_a_missing_backend_module_is_refused_naming_the_option(warehouse, monkeypatch):
    from paimon_ops.catalog import base
    monkeypatch.setitem(base.BACKENDS, "rest", "paimon_ops.catalog.no_such_module:X")
    with pytest.raises(UnsupportedError, match="metastore=rest: this build of paimon-ops has no rest catalog"):
        open_catalog(warehouse, {"metastore": "rest"})
