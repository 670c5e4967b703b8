"""remove-unexisting-files (Java's remove_unexisting_files), proven on Java Paimon 0.9 tables: Java writes, files are
deleted by hand, Java fails to read; the dry run lists each entry (partition, bucket, file, reason); without --yes
nothing changes; the commit drops exactly the entries whose files are missing (their deletion vectors, the data files
whose deletion-vector file is missing, the references to missing file indexes) and Java 0.9 reads the table again —
exactly the remaining rows, computed independently from the surviving data files (pyarrow) and Java's own scan of the
deletion vectors — as does pypaimon-rust 0.4.0 (pypaimon 2.1.0 reads no Java 0.9 manifest: it requires
_VALUE_STATS_COLS, which 0.9 does not write); a Java writer commits on top. Java 0.9 has no such procedure (its
remove_unexisting_files is Flink 1.1+), so there is no twin to compare with.

Bad input, one line, exit 2, nothing changed: a missing or unreadable manifest, a partition key the table does not
have, an unknown flag. A file that reappears between the plan and the commit is kept."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import paimon_ops as po
from tests import pypaimon_util as pu
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

pytestmark = [pytest.mark.java]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
PK = {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
      "options": {"bucket": "2", "deletion-vectors.enabled": "true"}}
APPEND = {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": [],
          "options": {"bucket": "2", "bucket-key": "id", "file-index.bloom-filter.columns": "v",
                      "file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "1 b"}}


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """db.pk: a primary-key table with deletion vectors (a full compaction, then updates compacted by lookup: every
    level-5 file has a deletion vector), tagged; db.ap: an append table whose files have file-index files."""
    wh = tmp_path_factory.mktemp("unexisting") / "wh"
    pk, ap = JavaTable(wh, "db", "pk"), JavaTable(wh, "db", "ap")
    full = {"rows": [[p, i, f"v0-{i}"] for p in ("a", "b") for i in range(30)], "compact": True}
    updates = {"rows": [[p, i, f"v1-{i}"] for p in ("a", "b") for i in range(0, 30, 3)], "compact": True,
               "full": False}
    rows = [{"rows": [[p, i + 100 * n, f"w{n}-{i}"] for p in ("a", "b") for i in range(12)]} for n in range(3)]
    jh.run_many([("create_table", pk.payload(schema=PK)), ("write", pk.payload(batches=[full, updates])),
                 ("create_tag", pk.payload(tag="t1")),
                 ("create_table", ap.payload(schema=APPEND)), ("write", ap.payload(batches=rows))])
    return wh


@pytest.fixture
def wh(java_src, tmp_path) -> Path:
    dst = tmp_path / "wh"
    shutil.copytree(java_src, dst)
    return dst


def _key(row) -> str:
    return json.dumps(row)


def _java_rows(t: JavaTable) -> Counter:
    return Counter(map(_key, t.call("read")["rows"]))


def _file_rows(path: Path, part: str, positions=()) -> Counter:
    """The rows of one data file as Java reads them (pt, id, v), without the deleted positions."""
    data = pq.ParquetFile(path).read(columns=["id", "v"]).to_pylist()
    gone = set(positions)
    return Counter(_key([part, r["id"], r["v"]]) for n, r in enumerate(data) if n not in gone)


def _scan(t: JavaTable) -> dict:
    return t.call("scan", dv_positions=True)


def _expected_from_files(t: JavaTable, scan: dict, dropped: set[str]) -> Counter:
    """The rows a reader must see once `dropped` files are gone: every other live file's rows minus its deletion
    vector (Java's own scan says which), read with pyarrow — not through paimon-ops."""
    dvs = {(i["partition_path"], r["data_file"]): r["positions"] for i in scan["index_files"]
           for r in i["dv_ranges"] or ()}
    out: Counter = Counter()
    for f in scan["files"]:
        if f["file_name"] in dropped or f["level"] == 0:  # (deletion-vector readers skip level 0)
            continue
        part = f["partition_path"].split("=")[1].rstrip("/")
        out += _file_rows(t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"], part,
                          dvs.get((f["partition_path"], f["file_name"]), ()))
    return out


def _java_fails(t: JavaTable) -> str:
    with pytest.raises(jh.JavaHarnessError) as e:
        t.call("read")
    return str(e.value)


def _latest_missing(t: JavaTable) -> list[str]:
    """The files Java's scan of the latest snapshot names that do not exist (data, file-index and deletion-vector
    files), checked on the file system."""
    scan = _scan(t)
    names = []
    for f in scan["files"]:
        names.append(t.path / f["file_path"])
        names += [(t.path / f["file_path"]).parent / x for x in f["extra_files"]]
    names += [t.path / "index" / i["file_name"] for i in scan["index_files"]]
    return sorted(p.name for p in names if not p.exists())


def test_append_table_drops_exactly_the_missing_files_and_java_reads_the_rest(wh):
    t = JavaTable(wh, "db", "ap")
    before_rows = _java_rows(t)
    scan = _scan(t)
    files = sorted(scan["files"], key=lambda f: (f["partition_path"], f["bucket"], f["file_name"]))
    gone = [files[0], files[-1]]                       # a file of pt=a and one of pt=b
    stripped = files[1]                                # keeps its data, loses its file-index file
    lost_rows = Counter()
    for f in gone:
        p = t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"]
        lost_rows += _file_rows(p, f["partition_path"].split("=")[1].rstrip("/"))
        p.unlink()
    index_file = t.path / stripped["partition_path"] / f"bucket-{stripped['bucket']}" / stripped["extra_files"][0]
    index_file.unlink()
    assert "data-" in _java_fails(t) or "FileNotFound" in _java_fails(t)
    assert _latest_missing(t) == sorted([f["file_name"] for f in gone] + stripped["extra_files"])

    dry = cli("remove-unexisting-files", wh, "db.ap", "--dry-run")
    assert dry.code == 0, dry.err
    for f in gone:
        line = next(ln for ln in dry.out.splitlines() if f["file_name"] in ln)
        assert f"partition {f['partition_path'].rstrip('/')}, bucket {f['bucket']}" in line
        assert "missing from storage" in line and line.lstrip().startswith("- data")
    assert any(stripped["extra_files"][0] in ln and "kept without it" in ln for ln in dry.out.splitlines())
    plan = cli("remove-unexisting-files", wh, "db.ap", "--dry-run", "--json").json
    rows = plan["details"]["missing"]
    assert sorted((r["file"], r["bucket"], r["kind"], r["reason"]) for r in rows) == sorted(
        [(f["file_name"], f["bucket"], "data", "missing") for f in gone]
        + [(stripped["extra_files"][0], stripped["bucket"], "extra", "missing")])
    assert {r["partition"]["pt"] for r in rows} == {"a", "b"}
    assert plan["warnings"] and "row(s) of the 2 dropped file(s) are lost" in plan["warnings"][0]

    digest = tree_digest(str(wh))
    refused = cli("remove-unexisting-files", wh, "db.ap")  # dry run unless confirmed
    assert refused.code == 2 and len(refused.err.strip().splitlines()) == 1 and "--yes" in refused.err
    assert tree_digest(str(wh)) == digest

    done = cli("remove-unexisting-files", wh, "db.ap", "--yes", "--json")
    assert done.code == 0, done.err
    report = done.json
    assert report["details"]["dropped_entries"] == 2 and report["details"]["stripped_entries"] == 1
    assert _java_rows(t) == before_rows - lost_rows
    assert _latest_missing(t) == []
    after = {f["file_name"]: f for f in _scan(t)["files"]}
    assert set(after) == {f["file_name"] for f in files} - {f["file_name"] for f in gone}
    assert after[stripped["file_name"]]["extra_files"] == []
    assert all(after[f["file_name"]]["extra_files"] == f["extra_files"] for f in files[2:-1])
    snaps = t.call("snapshots")
    assert snaps["snapshots"][-1]["commitKind"] == "OVERWRITE" and snaps["latest"] == report["snapshot_id"]
    got = pu.rust_read(str(wh), "db.ap")  # another independent reader
    assert Counter(_key([r["pt"], r["id"], r["v"]]) for r in got.to_pylist()) == before_rows - lost_rows
    # a Java writer commits on top, and a second run finds nothing
    w = t.call("write", batches=[{"rows": [["a", 999, "late"]]}], first_commit_identifier=10)
    assert w["latest_snapshot_id"] == report["snapshot_id"] + 1
    assert _java_rows(t) == before_rows - lost_rows + Counter([_key(["a", 999, "late"])])
    again = cli("remove-unexisting-files", wh, "db.ap", "--yes", "--json").json
    assert again["snapshot_id"] is None and not again["details"]["missing"]


def test_primary_key_table_with_deletion_vectors(wh):
    """A level-5 file with a deletion vector goes missing (its vector is dropped: the bucket's vectors rewritten), and
    the deletion-vector index file of another bucket goes missing (the data file whose vector it held is dropped too:
    its deleted rows would come back). Java reads exactly the rows of the remaining files minus their vectors."""
    t = JavaTable(wh, "db", "pk")
    scan = _scan(t)
    assert _java_rows(t) == _expected_from_files(t, scan, set())  # the independent computation, checked first
    top = {(f["partition_path"].rstrip("/"), f["bucket"]): f for f in scan["files"] if f["level"] == 5}
    gone = top[("pt=a", 1)]
    (t.path / "pt=a" / "bucket-1" / gone["file_name"]).unlink()
    lost_index = next(i for i in scan["index_files"] if (i["partition_path"].rstrip("/"), i["bucket"]) == ("pt=b", 0))
    (t.path / "index" / lost_index["file_name"]).unlink()
    victim = lost_index["dv_ranges"][0]["data_file"]
    _java_fails(t)

    plan = cli("remove-unexisting-files", wh, "db.pk", "--dry-run", "--json").json
    by_file = {r["file"]: r for r in plan["details"]["missing"]}
    assert by_file[gone["file_name"]]["reason"] == "missing" and by_file[gone["file_name"]]["bucket"] == 1
    assert by_file[victim]["reason"] == "lost-deletion-vectors"
    assert by_file[lost_index["file_name"]]["reason"] == "missing-index"
    assert any("primary-key table" in w for w in plan["warnings"])
    assert plan["details"]["tags_still_missing_files"] == ["t1"]
    text = cli("remove-unexisting-files", wh, "db.pk", "--dry-run").out
    assert "the deletion vectors of the remaining files" not in text  # bucket a/1 had one vector: nothing remains

    done = cli("remove-unexisting-files", wh, "db.pk", "--yes", "--json")
    assert done.code == 0, done.err
    after = _scan(t)
    assert {f["file_name"] for f in after["files"]} == {f["file_name"] for f in scan["files"]} - {gone["file_name"],
                                                                                                   victim}
    assert all(r["data_file"] not in (gone["file_name"], victim) for i in after["index_files"]
               for r in i["dv_ranges"] or ())
    expected = _expected_from_files(t, scan, {gone["file_name"], victim})
    assert _java_rows(t) == expected
    assert _latest_missing(t) == []
    got = pu.rust_read(str(wh), "db.pk")
    assert Counter(_key([r["pt"], r["id"], r["v"]]) for r in got.to_pylist()) == expected
    with pytest.raises(jh.JavaHarnessError):  # the tag is never rewritten: it still names the missing file
        t.call("read", tag="t1")


def test_partition_filter_and_a_file_that_reappears(wh):
    t = JavaTable(wh, "db", "ap")
    files = sorted(_scan(t)["files"], key=lambda f: (f["partition_path"], f["file_name"]))
    a = next(f for f in files if f["partition_path"].rstrip("/") == "pt=a")
    b = next(f for f in files if f["partition_path"].rstrip("/") == "pt=b")
    moved = {}
    for f in (a, b):
        p = t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"]
        moved[f["file_name"]] = (p, p.read_bytes())
        p.unlink()
    plan = cli("remove-unexisting-files", wh, "db.ap", "--partition", "pt=a", "--dry-run", "--json").json
    assert [r["file"] for r in plan["details"]["missing"]] == [a["file_name"]]

    table = po.Catalog(str(wh)).get_table("db.ap")
    fresh = table.maintenance.remove_unexisting_files(partitions=[{"pt": "b"}])
    assert [r["file"] for r in fresh.details["missing"]] == [b["file_name"]]
    p, data = moved[b["file_name"]]
    p.write_bytes(data)  # restored from a backup between the plan and the commit
    latest = t.call("snapshots")["latest"]
    report = fresh.execute()
    assert report.snapshot_id is None and report.details["dropped_entries"] == 0
    assert any("exists again" in w for w in report.warnings)
    assert t.call("snapshots")["latest"] == latest


def test_concurrent_java_commit_between_plan_and_commit(wh):
    t = JavaTable(wh, "db", "ap")
    f = _scan(t)["files"][0]
    (t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"]).unlink()
    plan = po.Catalog(str(wh)).get_table("db.ap").maintenance.remove_unexisting_files()
    w = t.call("write", batches=[{"rows": [["b", 500, "meanwhile"]]}], first_commit_identifier=20)
    report = plan.execute()
    assert report.snapshot_id == w["latest_snapshot_id"] + 1 and report.details["dropped_entries"] == 1
    assert _key(["b", 500, "meanwhile"]) in _java_rows(t)
    assert f["file_name"] not in {x["file_name"] for x in _scan(t)["files"]}


def _latest_manifests(table) -> list:
    from paimon_ops.table.scan import ManifestStore
    store, snap = ManifestStore(table), table.snapshots.latest()
    return [m for lst in (snap.base_manifest_list, snap.delta_manifest_list) for m in store.manifest_list(lst)]


def test_drop_missing_manifests(wh):
    """A data manifest holding only ADD entries goes missing (with a data file another manifest adds): refused without
    --drop-missing-manifests; with it, the manifest's files leave the table and Java reads exactly the rest."""
    from paimon_ops.table.scan import ManifestStore
    t = JavaTable(wh, "db", "ap")
    before = _java_rows(t)
    files = {f["file_name"]: f for f in _scan(t)["files"]}
    table = po.Catalog(str(wh)).get_table("db.ap").raw
    store = ManifestStore(table)
    last = store.manifest_list(table.snapshots.latest().delta_manifest_list)[0]  # the last write's: ADDs only
    assert last.num_deleted_files == 0
    gone = [files[e.file.file_name] for e in store.manifest(last.file_name)]
    other = next(f for name, f in sorted(files.items()) if name not in {g["file_name"] for g in gone})
    lost = Counter()
    for f in gone + [other]:
        lost += _file_rows(t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"],
                           f["partition_path"].split("=")[1].rstrip("/"))
    (t.path / "manifest" / last.file_name).unlink()
    (t.path / other["partition_path"] / f"bucket-{other['bucket']}" / other["file_name"]).unlink()
    digest = tree_digest(str(wh))
    r = cli("remove-unexisting-files", wh, "db.ap", "--yes")
    assert r.code == 2 and last.file_name in r.err and "--drop-missing-manifests" in r.err, r.err
    assert tree_digest(str(wh)) == digest
    plan = cli("remove-unexisting-files", wh, "db.ap", "--drop-missing-manifests", "--dry-run", "--json").json
    assert plan["details"]["dropped_manifests"] == [{"manifest": last.file_name, "added_files": len(gone)}]
    assert [r["file"] for r in plan["details"]["missing"]] == [other["file_name"]]
    done = cli("remove-unexisting-files", wh, "db.ap", "--drop-missing-manifests", "--yes", "--json")
    assert done.code == 0, done.err
    assert _java_rows(t) == before - lost
    assert t.call("snapshots")["snapshots"][-1]["totalRecordCount"] == sum((before - lost).values())
    assert _latest_missing(t) == []
    w = t.call("write", batches=[{"rows": [["a", 4242, "after"]]}], first_commit_identifier=40)
    assert w["latest_snapshot_id"] == done.json["snapshot_id"] + 1


def test_a_missing_manifest_with_delete_entries_is_never_dropped(wh):
    """The compaction's manifest of the primary-key table holds DELETE entries: dropping it would bring back the files
    it removed — refused in one line even with --drop-missing-manifests, nothing changed."""
    t = JavaTable(wh, "db", "pk")
    table = po.Catalog(str(wh)).get_table("db.pk").raw
    from paimon_ops.table.scan import ManifestStore
    store = ManifestStore(table)
    with_deletes = next(m for m in _latest_manifests(table) if m.num_deleted_files)
    assert store.manifest(with_deletes.file_name)
    (t.path / "manifest" / with_deletes.file_name).unlink()
    digest = tree_digest(str(wh))
    r = cli("remove-unexisting-files", wh, "db.pk", "--drop-missing-manifests", "--yes")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "DELETE entr" in r.err and with_deletes.file_name in r.err
    assert tree_digest(str(wh)) == digest


@pytest.mark.parametrize("case", ["manifest", "garbled-manifest", "partition-key", "flag"])
def test_bad_input_is_one_line_and_changes_nothing(wh, case):
    t = JavaTable(wh, "db", "ap")
    f = _scan(t)["files"][0]
    (t.path / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"]).unlink()
    args = ["--yes"]
    want = ""
    if case in ("manifest", "garbled-manifest"):
        table = po.Catalog(str(wh)).get_table("db.ap").raw
        snap = table.snapshots.latest()
        from paimon_ops.table.scan import ManifestStore
        manifest = ManifestStore(table).manifest_list(snap.delta_manifest_list)[0].file_name
        path = t.path / "manifest" / manifest
        if case == "manifest":
            path.unlink()
        else:
            path.write_bytes(b"Obj\x01garbage")
        want = manifest
    elif case == "partition-key":
        args += ["--partition", "nope=1"]
        want = "nope"
    else:
        args += ["--drop-everything"]
        want = "--drop-everything"
    digest = tree_digest(str(wh))
    r = cli("remove-unexisting-files", wh, "db.ap", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert want in r.err and "Traceback" not in r.err
    assert tree_digest(str(wh)) == digest
