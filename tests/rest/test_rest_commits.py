"""Commits through a REST catalog (the spec server): a commit the server refuses because its base is no longer the
latest is retried from the new latest when nothing conflicts, and refused (or re-planned) exactly as a local commit
conflict when something does; external tables keep the file commit; saved plans and table patterns go through the
catalog; the catalog's latest snapshot, not the LATEST hint, is what paimon-ops plans on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.catalog.rest_client import RestClient
from paimon_ops.errors import CommitConflictError, CorruptMetadataError
from tests.cli.conftest import cli
from tests.pypaimon_util import catalog as fs_catalog
from tests.rest.test_spec_server import create, read, server_latest, write


@pytest.fixture
def table(rest):
    create(rest.pypaimon_catalog(), "db.t")
    for n in range(3):
        write(rest.pypaimon_catalog().get_table("db.t"), [(n, "a", f"a{n}"), (n, "b", f"b{n}")])
    return Path(rest.warehouse) / "db.db" / "t"


def _once_before_commit(monkeypatch, action):
    """Run `action` (a real commit of another writer) once, just before paimon-ops' first /commit request."""
    original = RestClient.commit_snapshot
    state = {"done": False}

    def commit(self, *a, **kw):
        if not state["done"]:
            state["done"] = True
            action()
        return original(self, *a, **kw)

    monkeypatch.setattr(RestClient, "commit_snapshot", commit)


def test_a_stale_base_is_retried_from_the_new_latest(rest, table, monkeypatch):
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    plan = t.maintenance.compact(mode="full", partitions=[{"dt": "a"}])
    # another writer commits into partition b between our plan and our commit: no conflict, but a new base
    _once_before_commit(monkeypatch, lambda: write(rest.pypaimon_catalog().get_table("db.t"), [(9, "b", "late")]))
    report = plan.execute(runner=po.LocalRunner())
    commits = [q for q in rest.requests() if q["path"].endswith("/commit")]
    assert [q["success"] for q in commits[-3:]] == [True, False, True]  # pypaimon's, ours refused, ours again
    latest = server_latest(rest)["snapshot"]
    assert latest["id"] == report.snapshot_id == 5 and latest["commitKind"] == "COMPACT"
    assert (9, "b", "late") in read(rest.pypaimon_catalog().get_table("db.t"))
    assert rest.foreign_metadata(table) == []


def test_a_conflicting_commit_is_refused_or_replanned(rest, table, monkeypatch):
    cat = po.Catalog(rest.warehouse_name, options=rest.options())

    def other_compaction(partitions=None):  # a real concurrent compaction of the same files, through the server
        other = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
        other.maintenance.compact(mode="full", partitions=partitions).execute(runner=po.LocalRunner())

    rows = read(rest.pypaimon_catalog().get_table("db.t"))
    manifests_before = set((table / "manifest").iterdir())
    _once_before_commit(monkeypatch, other_compaction)
    with pytest.raises(CommitConflictError, match="no longer live"):
        cat.get_table("db.t").maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    latest = server_latest(rest)["snapshot"]
    assert latest["id"] == 4  # only the other compaction
    # what our refused attempt wrote is gone again (the other compaction's manifests stay)
    ours = set((table / "manifest").iterdir()) - manifests_before
    referenced = json.dumps(latest)
    assert not [p for p in ours if p.name.startswith("manifest-list") and p.name not in referenced]
    assert read(rest.pypaimon_catalog().get_table("db.t")) == rows

    # with re-planning allowed, the same race ends in a fresh plan on the new latest, committed: the other writer
    # compacts partition b, we re-plan and compact what is left (partition a)
    write(rest.pypaimon_catalog().get_table("db.t"), [(5, "a", "new"), (5, "b", "new")])
    _once_before_commit(monkeypatch, lambda: other_compaction([{"dt": "b"}]))
    report = cat.get_table("db.t").maintenance.compact(mode="full").execute(runner=po.LocalRunner(), max_replans=2)
    assert report.details["replans"] == 1
    assert server_latest(rest)["snapshot"]["id"] == report.snapshot_id == 7  # 5: the write, 6: theirs, 7: ours
    assert rest.foreign_metadata(table) == []


def test_the_catalogs_latest_snapshot_not_the_hint(rest, table):
    """A LATEST hint (or a snapshot file) written around the server does not move paimon-ops: it plans on the
    server's latest, and refuses destructive work while the files disagree with the catalog."""
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    (table / "snapshot" / "LATEST").write_text("1")  # a stale hint
    assert t.latest_snapshot_id == 3
    # a snapshot file the server never committed
    (table / "snapshot" / "snapshot-4").write_text((table / "snapshot" / "snapshot-3").read_text()
                                                   .replace('"id" : 3', '"id" : 4').replace('"id": 3', '"id": 4'))
    assert t.latest_snapshot_id == 3
    with pytest.raises(CorruptMetadataError, match="the catalog's latest snapshot is 3"):
        t.maintenance.remove_orphans(min_age=None, allow_short=True)


def test_external_tables_commit_on_their_files(rest, tmp_path):
    ext_wh = tmp_path / "elsewhere"
    ext = ext_wh / "db.db" / "ext"
    create(rest.pypaimon_catalog(), "db.ext", options={"path": str(ext)})
    for n in range(3):  # pypaimon commits an external table on its files (its filesystem catalog: see the spec test)
        write(fs_catalog(str(ext_wh)).get_table("db.ext"), [(n, "a", f"x{n}")])
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.ext")
    assert t.location == str(ext)
    report = t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    assert (ext / "snapshot" / f"snapshot-{report.snapshot_id}").exists()
    assert (ext / "snapshot" / "LATEST").read_text() == str(report.snapshot_id)  # as the filesystem catalog does
    assert not [q for q in rest.requests() if "/ext/commit" in q["path"] or "/ext/snapshot" in q["path"]]
    assert read(fs_catalog(str(ext_wh)).get_table("db.ext")) == [(0, "a", "x0"), (1, "a", "x1"), (2, "a", "x2")]


def test_saved_plan_and_patterns_go_through_the_catalog(rest, table, tmp_path):
    create(rest.pypaimon_catalog(), "db.u", pk=False)
    for n in range(3):
        write(rest.pypaimon_catalog().get_table("db.u"), [(n, "a", f"u{n}")])
    opts = [f"-o{k}={v}" for k, v in rest.options().items()]
    r = cli("compact", rest.warehouse_name, "db.t", *opts, "--dry-run", "--json")
    assert r.code == 0, r.err
    saved = json.loads(r.out)
    assert saved["catalog"]["metastore"] == "rest" and "token" not in saved["catalog"]  # never a secret
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(r.out)
    token = [o for o in opts if o.startswith("-otoken=")]
    r = cli("apply", str(plan_file), *token, "--json")
    assert r.code == 0, r.err + r.out
    applied = json.loads(r.out)["snapshot_id"]
    assert server_latest(rest)["snapshot"]["id"] == applied
    assert any(q["path"].endswith("/t/commit") and q["success"] for q in rest.requests())

    # (--parallel 2: each table in a worker process, each with its own connection to the server)
    r = cli("compact", rest.warehouse_name, "db.*", *opts, "--mode", "full", "--json", "--parallel", "2")
    assert r.code == 0, r.err + r.out
    assert server_latest(rest, "db.u")["snapshot"]["commitKind"] == "COMPACT"
    assert rest.foreign_metadata(table) == [] and rest.foreign_metadata(table.parent / "u") == []


def test_a_commit_whose_answer_is_lost_keeps_its_files(rest, table, monkeypatch):
    """No answer in time: the request may still be in flight on the server, so nothing the attempt wrote is removed
    (the server does commit it a moment later, and the table reads)."""
    from paimon_ops.catalog import rest_client
    from paimon_ops.errors import CommitOutcomeUnknownError
    monkeypatch.setattr(rest_client, "DEFAULT_READ_TIMEOUT_S", 1.0)
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    plan = t.maintenance.compact(mode="full")
    assert rest.call("POST", "/test/config", {"delay_ms": {"POST /commit": 4000}})[0] == 200
    with pytest.raises(CommitOutcomeUnknownError, match="new files are kept"):
        plan.execute(runner=po.LocalRunner())
    import time
    deadline = time.time() + 30
    while server_latest(rest)["snapshot"]["id"] != 4 and time.time() < deadline:
        time.sleep(0.2)
    latest = server_latest(rest)["snapshot"]
    assert latest["id"] == 4 and latest["commitKind"] == "COMPACT"
    rest.call("POST", "/test/config", {"delay_ms": {}})
    assert len(read(rest.pypaimon_catalog().get_table("db.t"))) == 6  # every manifest it names is there


def test_a_commit_answered_with_an_error_after_it_was_taken_is_committed(rest, table):
    """The server took the snapshot but answered 500 (Java's test server can): the latest is ours, so the commit
    succeeded — not retried, nothing removed."""
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    plan = t.maintenance.compact(mode="full")
    rest.call("POST", "/test/config", {"fail_after_commit": 1})
    report = plan.execute(runner=po.LocalRunner())
    assert report.snapshot_id == 4 == server_latest(rest)["snapshot"]["id"]
    assert [q["status"] for q in rest.requests() if q["path"].endswith("/commit")][-1] == 500
    assert len(read(rest.pypaimon_catalog().get_table("db.t"))) == 6


def test_partition_expiry_of_a_metastore_partitioned_table_is_a_commit(rest):
    """Java's RESTCatalog has no partition modification: a `metastore.partitioned-table` table's partitions are the
    server's, kept by the commits' statistics, so its partition expiry is not refused — it is an OVERWRITE commit."""
    create(rest.pypaimon_catalog(), "db.p", options={"metastore.partitioned-table": "true"})
    write(rest.pypaimon_catalog().get_table("db.p"), [(1, "2020-01-01", "old"), (2, "2020-01-09", "new")])
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.p")
    import datetime as dt
    now = dt.datetime(2020, 1, 10, tzinfo=dt.timezone.utc)
    t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=5), now=now).execute()
    assert server_latest(rest, "db.p")["snapshot"]["commitKind"] == "OVERWRITE"
    assert read(rest.pypaimon_catalog().get_table("db.p")) == [(2, "2020-01-09", "new")]
    parts = rest.call("GET", "/v1/paimon/databases/db/tables/p/partitions")[1]["partitions"]
    assert [p["spec"] for p in parts] == [{"dt": "2020-01-09"}]


def test_dagster_definitions_list_exactly_the_catalogs_tables(rest, tmp_path):
    from paimon_ops.dagster import build_paimon_definitions
    create(rest.pypaimon_catalog(), "db.t")
    create(rest.pypaimon_catalog(), "db.u", pk=False)
    (Path(rest.warehouse) / "db.db" / "stray" / "schema").mkdir(parents=True)  # not registered: not a table
    defs = build_paimon_definitions(rest.warehouse_name, catalog_options=rest.options())
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    tables = {k.split("/")[1] + "." + k.split("/")[2] for k in keys if k.startswith("paimon/") and
              len(k.split("/")) >= 3 and not k.split("/")[1].startswith("_")}
    assert tables == {"db.t", "db.u"}, keys


def test_spark_executors_write_the_commit_goes_through_the_server(rest, table, spark):
    """On Spark the tasks run in executors (they re-open the table by its location and write data files); the one
    commit is the driver's, through the server."""
    from paimon_ops.execution.runner import SparkRunner
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    report = t.maintenance.compact(mode="full").execute(runner=SparkRunner(spark))
    assert "spark" in json.dumps(report.runner).lower()
    assert server_latest(rest)["snapshot"]["id"] == report.snapshot_id == 4
    assert len(read(rest.pypaimon_catalog().get_table("db.t"))) == 6
    assert rest.foreign_metadata(table) == []


def test_branches_of_rest_tables_are_refused_in_one_line(rest, table):
    from paimon_ops.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="branch 'b' of db.t: paimon-ops maintains the main branch"):
        po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t", branch="b")


@pytest.mark.parametrize("defaults,overrides,ours,expected", [
    ({"data-token.enabled": "true"}, {}, {}, True),
    ({"data-token.enabled": "true"}, {}, {"data-token.enabled": "false"}, False),  # ours over the server's defaults
    ({}, {"data-token.enabled": "true"}, {"data-token.enabled": "false"}, True),   # the server's overrides over ours
    ({}, {}, {}, False),
])
def test_config_merge_decides_data_tokens(tmp_path, defaults, overrides, ours, expected):
    from paimon_ops.catalog.rest import TokenFileIO
    from tests.rest.fixture import rest_server
    wh = tmp_path / "wh"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state", defaults=defaults, overrides=overrides,
                     data_token={"ttl_ms": 7_200_000, "options": {}}) as rest:
        create(rest.pypaimon_catalog(), "db.t")
        minted = len(rest.tokens())  # (pypaimon asks for tokens too, by its own merge)
        t = po.Catalog(rest.warehouse_name, options={**rest.options(), **ours}).get_table("db.t")
        assert isinstance(t.raw.io, TokenFileIO) is expected
        assert (len(rest.tokens()) > minted) is expected


def test_tag_rename_and_replace_through_the_tag_endpoints(rest, table):
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    t.tags.create("a", snapshot_id=1).execute()
    t.tags.rename("a", "b").execute()
    assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/a")[0] == 404
    status, got = rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/b")
    assert status == 200 and got["snapshot"]["id"] == 1
    t.tags.create("b", snapshot_id=2, replace=True).execute()
    assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/b")[1]["snapshot"]["id"] == 2
    tag_writes = [w for w in rest.writes() if w["kind"] == "tag"]
    assert [(w["op"], w["path"].rsplit("/", 1)[1]) for w in tag_writes] == [
        ("create", "tag-a"), ("create", "tag-b"), ("delete", "tag-a"), ("delete", "tag-b"), ("create", "tag-b")]
    assert read(rest.pypaimon_catalog().get_table("db.t").copy({"scan.tag-name": "b"})) == [
        (0, "a", "a0"), (0, "b", "b0"), (1, "a", "a1"), (1, "b", "b1")]
