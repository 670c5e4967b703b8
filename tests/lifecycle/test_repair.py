"""`repair` of the snapshot hints (Java's repair_earliest_snapshot, and the LATEST a crashed writer leaves), proven on
Java Paimon 0.9 tables: with the hint left behind Java resolves the latest snapshot to a deleted file — its read fails
and so does its writer's commit —; after `repair` Java resolves latest and
earliest correctly, reads every row and commits the right next snapshot id. The dry run lists each hint with what it
says and why it changes; reruns change nothing. A gap in the snapshot ids is refused unless --earliest names the
snapshot after it (as Java's procedure), and that snapshot is then Java's earliest.

Bad input, one line, exit 2, nothing changed: a table with no snapshot (with or without hints), an --earliest that is
not the first snapshot after a gap, an unknown flag."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from paimon_ops.table import hints
from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}],
          "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1"}}


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """Six snapshots written by Java, the first three expired by Java (EARLIEST = 4, LATEST = 6); an empty table."""
    wh = tmp_path_factory.mktemp("repair") / "wh"
    t, empty = JavaTable(wh, "db", "t"), JavaTable(wh, "db", "empty")
    batches = [{"rows": [[i, f"v{i}"]]} for i in range(6)]
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches)),
                 ("expire_snapshots", t.payload(retain_min=3, retain_max=3)),
                 ("create_table", empty.payload(schema=SCHEMA))])
    return wh


@pytest.fixture
def wh(java_src, tmp_path) -> Path:
    dst = tmp_path / "wh"
    shutil.copytree(java_src, dst)
    return dst


def _snap_dir(wh: Path, name: str = "t") -> Path:
    return wh / "db.db" / name / "snapshot"


def _rows(t: JavaTable) -> list:
    return sorted(t.call("read")["rows"])


def test_stale_latest_left_by_a_crashed_writer(wh):
    t = JavaTable(wh, "db", "t")
    assert sorted(p.name for p in _snap_dir(wh).glob("snapshot-*")) == [f"snapshot-{i}" for i in (4, 5, 6)]
    rows = _rows(t)
    (_snap_dir(wh) / "LATEST").write_text("2")  # the hint a writer that crashed long ago left
    # what Java 0.9 makes of it: the latest snapshot is the deleted snapshot 2, and its writer commits snapshot 3
    assert t.call("snapshots")["latest"] == 2
    with pytest.raises(jh.JavaHarnessError, match="snapshot"):
        t.call("read")
    with pytest.raises(jh.JavaHarnessError, match="snapshot-2"):
        t.call("write", batches=[{"rows": [[99, "x"]]}], first_commit_identifier=50)

    dry = cli("repair", wh, "db.t", "--dry-run")
    assert dry.code == 0, dry.err
    line = next(ln for ln in dry.out.splitlines() if ln.rstrip().endswith("rewritten to 6)"))
    assert "/snapshot/LATEST" in line and "names snapshot 2, which does not exist" in line and "commits fail" in line
    plan = cli("repair", wh, "db.t", "--dry-run", "--json").json
    assert [f["path"].rsplit("/", 1)[1] for s in plan["steps"] for f in s["files"]] == ["LATEST"]
    assert {h["name"]: (h["current"], h["wanted"]) for h in plan["details"]["hints"]} == {"LATEST": (2, 6),
                                                                                          "EARLIEST": (4, 4)}
    done = cli("repair", wh, "db.t", "--json")
    assert done.code == 0, done.err
    assert done.json["written"] == {"hint": 1}
    assert (_snap_dir(wh) / "LATEST").read_text() == "6"
    snaps = t.call("snapshots")
    assert (snaps["earliest"], snaps["latest"]) == (4, 6)
    assert _rows(t) == rows
    w = t.call("write", batches=[{"rows": [[99, "x"]]}], first_commit_identifier=50)
    assert w["batches"][0]["snapshot_ids"] == [7] and _rows(t) == sorted(rows + [[99, "x"]])
    again = cli("repair", wh, "db.t", "--json").json  # Java's commit wrote LATEST = 7: nothing left to repair
    assert again["written"] == {} and again["details"]["stale_hints"] == 0


def test_stale_earliest_and_a_latest_beyond_the_newest_file(wh):
    t = JavaTable(wh, "db", "t")
    (_snap_dir(wh) / "EARLIEST").write_text("5")  # ahead of snapshot 4: Java skips it
    (_snap_dir(wh) / "LATEST").write_text("9")    # snapshots 7..9 lost in a bad copy
    assert t.call("snapshots")["earliest"] == 5
    plan = cli("repair", wh, "db.t", "--dry-run", "--json").json
    why = {f["path"].rsplit("/", 1)[1]: f["reason"] for s in plan["steps"] for f in s["files"]}
    assert "snapshots 4 … 4 exist: Java never reads or expires them" in why["EARLIEST"]
    assert "beyond the newest snapshot file" in why["LATEST"]
    assert any("7 … 9 are missing" in w for w in plan["warnings"])
    assert cli("repair", wh, "db.t").code == 0
    snaps = t.call("snapshots")
    assert (snaps["earliest"], snaps["latest"]) == (4, 6)
    assert [s["id"] for s in snaps["snapshots"]] == [4, 5, 6]


def test_a_gap_needs_earliest_as_javas_repair_earliest_snapshot(wh):
    t = JavaTable(wh, "db", "t")
    t.call("write", batches=[{"rows": [[7, "a"]]}, {"rows": [[8, "b"]]}], first_commit_identifier=20)  # 7, 8
    (_snap_dir(wh) / "snapshot-6").unlink()  # a gap: 4, 5 | 7, 8
    digest = tree_digest(str(wh))
    r = cli("repair", wh, "db.t")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "snapshot-6 is missing" in r.err and "--earliest 7" in r.err
    for bad, words in (("5", "snapshot-6 between it and the latest"), ("8", "snapshot-7 exists"),
                       ("6", "does not exist")):
        r = cli("repair", wh, "db.t", "--earliest", bad)
        assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert tree_digest(str(wh)) == digest
    plan = cli("repair", wh, "db.t", "--earliest", "7", "--dry-run", "--json").json
    assert any("4, 5 stay on disk below the gap" in w for w in plan["warnings"])
    assert cli("repair", wh, "db.t", "--earliest", "7").code == 0
    assert (_snap_dir(wh) / "EARLIEST").read_text() == "7"
    snaps = t.call("snapshots")
    assert (snaps["earliest"], snaps["latest"]) == (7, 8)
    assert [7, "a"] in _rows(t)


@pytest.mark.parametrize("case", ["no-snapshot", "hints-without-snapshots", "flag"])
def test_bad_input_is_one_line_and_changes_nothing(wh, case):
    table, args, want = "db.empty", [], "has no snapshot"
    if case == "hints-without-snapshots":
        table, want = "db.t", "holds no snapshot file, but"
        for p in _snap_dir(wh).glob("snapshot-*"):
            p.unlink()
    elif case == "flag":
        table, args, want = "db.t", ["--latest", "3"], "--latest"
    digest = tree_digest(str(wh))
    r = cli("repair", wh, table, *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and want in r.err, r.err
    assert tree_digest(str(wh)) == digest


def test_the_dagster_job_repairs_the_hints(wh):
    """The paimon_repair job on a real Dagster instance: a dry run changes nothing, the run repairs LATEST."""
    from dagster import instance_for_test

    from paimon_ops.dagster import build_paimon_definitions
    from tests.dagster.util import observations, run_job, table_key
    (_snap_dir(wh) / "LATEST").write_text("2")
    defs = build_paimon_definitions(str(wh))
    with instance_for_test() as instance:
        result = run_job(defs, "paimon_repair", "db.t", instance, {"dry_run": True, "repair": {}})
        assert result.success and (_snap_dir(wh) / "LATEST").read_text() == "2"
        result = run_job(defs, "paimon_repair", "db.t", instance)
        assert result.success
        assert any("repair" in o.get("operations", "") for o in observations(result, table_key("db.t")))
    assert (_snap_dir(wh) / "LATEST").read_text() == "6"
    snaps = JavaTable(wh, "db", "t").call("snapshots")
    assert (snaps["earliest"], snaps["latest"]) == (4, 6)


def test_a_rest_managed_table_is_refused_in_one_line(tmp_path):
    """The REST server owns the table's snapshots and hints: repair writes none of them."""
    from tests.rest.fixture import TOKEN, rest_server
    from tests.rest.test_spec_server import create, write
    warehouse = tmp_path / "rest-wh"
    warehouse.mkdir()
    with rest_server(str(warehouse), tmp_path / "state", bearer_tokens={TOKEN: None}) as rest:
        create(rest.pypaimon_catalog(), "db.t")
        write(rest.pypaimon_catalog().get_table("db.t"), [(1, "a", "x")])
        digest = tree_digest(str(warehouse))
        r = cli("repair", rest.warehouse_name, "db.t", *[f"-o{k}={v}" for k, v in rest.options().items()])
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
        assert "owns the table's history" in r.err and "db.t" in r.err
        assert tree_digest(str(warehouse)) == digest


def test_decide_and_ensure_are_the_one_piece_of_code_for_hints(wh):
    """The module every operation writing hints calls: garbage and missing hints are rewritten, a right one is not."""
    table = FileStoreTable(str(wh / "db.db" / "t"))
    (_snap_dir(wh) / "LATEST").write_bytes(b"\xff garbage")
    (_snap_dir(wh) / "EARLIEST").unlink()
    decided = {h.name: h for h in hints.decide(table.snapshots)}
    assert decided["LATEST"].now is None and "not a snapshot id" in decided["LATEST"].why
    assert decided["EARLIEST"].why == "is missing"
    written = hints.ensure(table.snapshots)
    assert sorted(h.name for h in written) == ["EARLIEST", "LATEST"]
    assert hints.ensure(table.snapshots) == []
    assert [h.stale for h in hints.decide(table.snapshots)] == [False, False]
