"""A bucket's deletion-vector index files, proven on Java Paimon 0.9: no operation of ours loses a vector.

Java 0.9 writes a primary-key table with deletion vectors and a tiny `deletion-vector.index-file.target-size`
(128 bytes): many updates and deletes over many level-4/5 files, compacted by Java's lookup compaction, then one more
level-0 commit left pending. Java still keeps ONE DV index file per bucket, kilobytes large: the target size is only
for unaware-bucket append tables (0.9's AbstractFileStore gives a bucketed table's DV writer an unlimited target; 1.3+
writes a bucket's vectors with writeSingleFile), and Java's index manifest keeps one entry per (partition, bucket)
anyway. So "a bucket's new DV index file replaces every old one" is right as long as the new file holds every vector
of the bucket — which is what each operation of ours is checked for here.

A table whose bucket holds two DV index files is still readable (Java's reader, ours and pypaimon-rust merge them);
we make one by splitting a bucket's file in two, as a writer that rolled would leave it, and check that every
operation rewrites such a bucket as a whole (into one file) instead of dropping one file's vectors.

Each operation (minor, full, dv-ratio compaction, rescale, remove-unexisting-files) runs on a copy; then Java reads
exactly the expected rows (a Java full compaction of a twin copy gives them, or the rows before for operations that
leave level 0 alone), as does pypaimon-rust 0.4.0; Java finds every file; every data file that stays keeps at least
the deleted positions it had; a bucket has one DV index file.

An unaware-bucket append table is the other case: Java (its Spark DELETE path, `delete_positions` in the harness)
rolls one bucket's vectors into several index files at a small target size, and our index manifest keys them by
file name as Java's does. Small-file, full and dv-ratio compaction of such a table keep every other vector (the
untouched index files as they are), and Java, pypaimon-rust and one more Java DELETE on top read exactly the rows.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import paimon_ops as po
from paimon_ops.compact.dv import supports_cardinality, write_dv_index
from paimon_ops.errors import PaimonOpsError
from paimon_ops.format import manifest as mf
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java]

FIELDS = [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "BIGINT"), ("s", "STRING")]
TARGET = 128  # deletion-vector.index-file.target-size in bytes: far below one bucket's vectors
OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true", "deletion-vector.index-file.target-size": f"{TARGET} b",
           "target-file-size": "4 kb", "write-only": "true"}
N = 6000  # keys per partition: several level-4/5 files per bucket (Java checks the file size every 1000 rows)


def _history(t: JavaTable) -> list[tuple[str, dict]]:
    """A full compaction (max level), six rounds of updates and deletes each lookup-compacted by Java (deletion
    vectors over many files), then one pending level-0 commit."""
    parts = ("x", "y")
    cmds = [("create_table", t.payload(schema={
        "fields": [{"name": n, "type": ty} for n, ty in FIELDS], "partition_keys": ["pt"],
        "primary_keys": ["pt", "id"], "options": OPTIONS})),
        ("write", t.payload(batches=[{"rows": [[p, i, i, f"s{i}"] for p in parts for i in range(N)]}])),
        ("compact", t.payload(full=True))]

    def batch(r: int) -> dict:
        rows = [[p, i, 1000 * r + i, f"u{r}"] for p in parts for i in range(r, N, 7 + r)]
        dels = [[p, i, 0, None] for p in parts for i in range(3 + r, N, 29 + r)]
        return {"rows": rows + dels, "kinds": ["+U"] * len(rows) + ["-D"] * len(dels)}

    for r in range(6):
        cmds += [("write", t.payload(batches=[batch(r)])), ("compact", t.payload(full=False))]
    cmds.append(("write", t.payload(batches=[batch(6)])))
    return cmds


def _split(path: Path) -> None:
    """Test surgery: in every bucket, the one DV index file becomes two (each with a level-5 and a level-4 file's
    vectors), in the latest snapshot's index manifest — what a writer that rolled a bucket's vectors would leave."""
    table = FileStoreTable(str(path))
    scanner = TableScanner(table)
    snap = table.snapshots.latest()
    result = scanner.scan(snap)
    level = {f.name: f.meta.level for f in result.files}
    out = []
    for ie in scanner.index_entries(snap):
        ranges = sorted(ie.dv_ranges or (), key=lambda r: (level[r.data_file], r.data_file))
        assert {level[r.data_file] for r in ranges} >= {4, 5}
        halves = (ranges[0::2], ranges[1::2])  # both halves: level 4 and level 5 files
        for half in halves:
            dvs = {r.data_file: scanner.deletion_vector(ie, r) for r in half}
            entry, _ = write_dv_index(table, scanner, ie.partition, ie.bucket, dvs, supports_cardinality(scanner))
            out.append(entry)
    table.io.write_bytes(table.manifest_path(snap.index_manifest),
                         mf.write_index_manifest(out, scanner.store.field_set("index_manifest", snap)))


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> dict:
    """The Java table ("java"), its copy with split DV index files ("split"), and what Java reads: both tables now,
    and the rows a Java full compaction of a twin copy gives (every pending row applied)."""
    root = tmp_path_factory.mktemp("dv_index")
    java = JavaTable(root / "java", "db", "t")
    jh.run_many(_history(java))
    twin = JavaTable(root / "twin", "db", "t")
    shutil.copytree(root / "java", root / "twin")
    shutil.copytree(root / "java", root / "split")
    split = JavaTable(root / "split", "db", "t")
    _split(split.path)
    res = jh.run_many([("compact", twin.payload(full=True)), ("read", twin.payload()),
                       ("read", java.payload()), ("scan", java.payload()),
                       ("read", split.payload()), ("scan", split.payload())])
    return {"root": root, "merged": res[1]["rows"], "java": {"read": res[2]["rows"], "scan": res[3]},
            "split": {"read": res[4]["rows"], "scan": res[5]}}


def _bag(rows) -> Counter:
    return Counter(json.dumps(list(r)) for r in rows)


def _dv_files(scan: dict) -> Counter:
    return Counter((ie["partition_path"].rstrip("/"), ie["bucket"]) for ie in scan["index_files"]
                   if ie["index_type"] == "DELETION_VECTORS")


def _positions(scan: dict) -> dict[str, set[int]]:
    return {r["data_file"]: set(r["positions"]) for ie in scan["index_files"] for r in ie["dv_ranges"] or []}


def test_java_keeps_one_dv_index_file_per_bucket_whatever_the_target_size(src):
    scan = src["java"]["scan"]
    assert set(_dv_files(scan).values()) == {1} and len(_dv_files(scan)) == 4
    assert all(ie["file_size"] > 10 * TARGET and len(ie["dv_ranges"]) >= 4 for ie in scan["index_files"])
    assert any(f["level"] == 0 for f in scan["files"]), "a level-0 commit is pending"


def test_two_dv_index_files_in_a_bucket_are_read_merged(src):
    """Java's reader, ours and pypaimon-rust read every DV index file of a bucket: the split table reads as the
    original one."""
    split = src["split"]["scan"]
    assert set(_dv_files(split).values()) == {2}
    assert _positions(split) == _positions(src["java"]["scan"])
    assert _bag(src["split"]["read"]) == _bag(src["java"]["read"])
    table = FileStoreTable(str(src["root"] / "split" / "db.db" / "t"))
    scanner = TableScanner(table)
    result = scanner.scan_latest()
    assert result is not None
    ours = {n: set(dv.positions().tolist()) for n, dv in scanner.deletion_vectors(result).items()}
    assert ours == _positions(src["java"]["scan"])
    rust = pu.rust_read(str(src["root"] / "split"), "db.t")
    assert _bag([r["pt"], r["id"], r["v"], r["s"]] for r in rust.to_pylist()) == _bag(src["java"]["read"])


def _remove_a_level4_file(table: FileStoreTable, scan: dict) -> tuple[po.Plan, set, str]:
    """Deletes a level-4 file of bucket (pt=x, 0) that has a vector (so the bucket's other vectors must be kept in a
    new index file): the plan, the keys that leave the table with it, the file's name."""
    f = next(f for f in sorted(scan["files"], key=lambda f: f["file_name"])
             if f["level"] == 4 and f["partition_path"].rstrip("/") == "pt=x" and f["bucket"] == 0
             and f["file_name"] in _positions(scan))
    path = Path(table.root) / f["partition_path"] / f"bucket-{f['bucket']}" / f["file_name"]
    ids = pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist()
    gone = _positions(scan)[f["file_name"]]
    path.unlink()
    keys = {("x", k) for i, k in enumerate(ids) if i not in gone}
    return po.Table(table).maintenance.remove_unexisting_files(), keys, f["file_name"]


OPS = ("minor", "full", "dv-ratio", "rescale", "remove-unexisting-files")


@pytest.mark.parametrize("source", ["java", "split"])
@pytest.mark.parametrize("op", OPS)
def test_operation_keeps_every_vector(src, tmp_path, op, source):
    shutil.copytree(src["root"] / source, tmp_path / "wh")
    jt = JavaTable(tmp_path / "wh", "db", "t")
    table = FileStoreTable(str(jt.path))
    before = src[source]["scan"]
    expected = _bag(src["merged"])
    if op in ("minor", "full"):
        plan = po.Table(table).maintenance.compact(mode=op)
    elif op == "dv-ratio":  # the level-5 files (about half their rows deleted), not the level-4 ones (a quarter)
        plan = po.Table(table).maintenance.compact(mode="dv-ratio", threshold=0.4)
        assert {f.level for t in plan.tasks for f in t.files} == {5}
        expected = _bag(src[source]["read"])  # level 0 stays pending, unread
    elif op == "rescale":
        plan = po.Table(table).maintenance.rescale(bucket_num=3)
    else:
        plan, keys, gone = _remove_a_level4_file(table, before)
        expected = _bag(r for r in src[source]["read"] if (r[0], r[1]) not in keys)
    report = plan.execute()
    assert report.snapshot_id is not None
    read, after, missing = jh.run_many([("read", jt.payload()), ("scan", jt.payload()), ("check_files", jt.payload())])
    # every file Java's checker finds missing is the one we deleted by hand (older snapshots still name it)
    assert {Path(m["path"]).name for m in missing["missing"]} <= {gone} if op == "remove-unexisting-files" else\
        missing["missing"] == []
    if op == "remove-unexisting-files":  # one bucket rewritten (into one file), the others untouched
        assert _dv_files(after) == {**_dv_files(before), ("pt=x", 0): 1}
    else:
        assert set(_dv_files(after).values()) <= {1}, "a bucket rewritten keeps one DV index file"
    live = {f["file_name"] for f in after["files"]}
    now = _positions(after)
    kept = {n: p for n, p in _positions(before).items() if n in live}
    assert all(p <= now.get(n, set()) for n, p in kept.items()), "a vector of a file that stays was lost"
    if op == "dv-ratio":
        assert kept and now, "the bucket's level-4 vectors were rewritten into the new index file"
    assert _bag(read["rows"]) == expected
    rust = pu.rust_read(str(tmp_path / "wh"), "db.t")
    assert _bag([r["pt"], r["id"], r["v"], r["s"]] for r in rust.to_pylist()) == expected


def test_a_commit_never_adds_two_dv_index_files_for_one_bucket(src, tmp_path):
    """The commit refuses (nothing written) rather than keep only the last of two files for a bucket."""
    shutil.copytree(src["root"] / "java", tmp_path / "wh")
    table = FileStoreTable(str(tmp_path / "wh" / "db.db" / "t"))
    scanner = TableScanner(table)
    snap = table.snapshots.latest()
    ie = next(i for i in scanner.index_entries(snap) if i.bucket == 0)
    halves = (ie.dv_ranges[:1], ie.dv_ranges[1:])
    added = [write_dv_index(table, scanner, ie.partition, 0, {r.data_file: scanner.deletion_vector(ie, r) for r in h},
                            supports_cardinality(scanner))[0] for h in halves]
    manifests = sorted(p.name for p in (tmp_path / "wh" / "db.db" / "t" / "manifest").iterdir())
    with pytest.raises(PaimonOpsError, match="two DELETION_VECTORS index files for bucket 0"):
        FileStoreCommit(table).commit(CommitChanges(index_added=tuple(added), index_deleted=(ie,)), "COMPACT",
                                      snap.id)
    assert table.snapshots.latest_id() == snap.id
    assert sorted(p.name for p in (tmp_path / "wh" / "db.db" / "t" / "manifest").iterdir()) == manifests


# ------------------------------------------------------------------ unaware-bucket append tables

AP_FIELDS = [("k", "INT"), ("v", "STRING"), ("dt", "STRING")]
AP_OPTIONS = {"bucket": "-1", "deletion-vectors.enabled": "true", "deletion-vector.index-file.target-size": "100 b"}


def _ap_history(t: JavaTable) -> list[tuple[str, dict]]:
    """Six 100-row files in dt=d1, two in dt=d2, written by Java (one file per write)."""
    batches = [{"rows": [[i * 100 + j, f"v{i}", "d1" if i < 6 else "d2"] for j in range(100)]} for i in range(8)]
    return [("create_table", t.payload(schema={
        "fields": [{"name": n, "type": ty} for n, ty in AP_FIELDS], "partition_keys": ["dt"], "primary_keys": [],
        "options": AP_OPTIONS})), ("write", t.payload(batches=batches)), ("scan", t.payload())]


@pytest.fixture(scope="module")
def unaware(tmp_path_factory) -> dict:
    """An unaware-bucket append table whose rows Java deleted in two commits the way Spark's DELETE does with
    deletion vectors: at a 100-byte target size Java rolls the vectors of one bucket into several index files of
    about two vectors each, and its second commit rewrites only the index file it touched."""
    root = tmp_path_factory.mktemp("dv_index_unaware")
    t = JavaTable(root / "wh", "db", "ap")
    scan = jh.run_many(_ap_history(t))[-1]
    files = sorted(scan["files"], key=lambda f: _k_at(t.path, scan, f["file_name"], 0))  # in writing order
    d1 = [f["file_name"] for f in files if f["partition_path"].rstrip("/") == "dt=d1"]
    d2 = [f["file_name"] for f in files if f["partition_path"].rstrip("/") == "dt=d2"]
    first = {f: list(range(i, 100, 3 + i)) for i, f in enumerate(d1[:4])}  # 34, 25, 20, 17 of 100 rows
    first[d2[0]] = list(range(0, 100, 10))
    res = jh.run_many([("delete_positions", t.payload(positions=first)),
                       ("delete_positions", t.payload(positions={d1[1]: [99], d1[4]: [0, 1]})),
                       ("read", t.payload()), ("scan", t.payload())])
    return {"root": root, "d1": d1, "d2": d2, "read": res[2]["rows"], "scan": res[3]}


def test_java_rolls_an_unaware_buckets_vectors_into_several_index_files(unaware):
    scan = unaware["scan"]
    assert _dv_files(scan)[("dt=d1", 0)] >= 3 and _dv_files(scan)[("dt=d2", 0)] == 1
    assert any(len(ie["dv_ranges"]) >= 2 for ie in scan["index_files"])
    assert len(unaware["read"]) == 800 - (34 + 26 + 20 + 17 + 2) - 10


def _k_at(table_root: Path, scan: dict, name: str, position: int) -> int:
    f = next(f for f in scan["files"] if f["file_name"] == name)
    path = table_root / f["partition_path"] / f"bucket-{f['bucket']}" / name
    return pq.ParquetFile(path).read(columns=["k"]).column("k")[position].as_py()


@pytest.mark.parametrize("op", ["small-files", "full", "dv-ratio"])
def test_unaware_bucket_compaction_keeps_every_vector(unaware, tmp_path, op):
    """Our compaction of a bucket with several Java DV index files: the index files that held a vector of a
    compacted file are replaced by files with their other vectors, the others stay; Java (read, check_files, then
    one more Java DELETE on our index manifest) and pypaimon-rust read exactly the rows."""
    shutil.copytree(unaware["root"] / "wh", tmp_path / "wh")
    jt = JavaTable(tmp_path / "wh", "db", "ap")
    table = FileStoreTable(str(jt.path))
    before = unaware["scan"]
    if op == "dv-ratio":  # the files with 34 and 26 of 100 rows deleted; their index files hold other vectors too
        plan = po.Table(table).maintenance.compact(mode="dv-ratio", threshold=0.25)
        assert {f.name for t in plan.tasks for f in t.files} == set(unaware["d1"][:2])
    else:
        plan = po.Table(table).maintenance.compact(mode=op)
    report = plan.execute()
    assert report.snapshot_id is not None
    read, after, missing = jh.run_many([("read", jt.payload()), ("scan", jt.payload()), ("check_files", jt.payload())])
    assert missing["missing"] == []
    live = {f["file_name"] for f in after["files"]}
    now = _positions(after)
    kept = {n: p for n, p in _positions(before).items() if n in live}
    assert all(now.get(n) == p for n, p in kept.items()), "a vector of a file that stays was lost"
    assert set(now) <= live
    if op == "dv-ratio":
        assert set(kept) == {unaware["d1"][2], unaware["d1"][3], unaware["d1"][4], unaware["d2"][0]}
        untouched = {ie["file_name"] for ie in before["index_files"]
                     if not {r["data_file"] for r in ie["dv_ranges"]} & set(unaware["d1"][:2])}
        assert untouched and untouched <= {ie["file_name"] for ie in after["index_files"]}
    expected = _bag(unaware["read"])
    assert _bag(read["rows"]) == expected
    rust = pu.rust_read(str(tmp_path / "wh"), "db.ap")
    assert _bag([r["k"], r["v"], r["dt"]] for r in rust.to_pylist()) == expected
    # Java deletes one more row of every file that still has a vector, on the index manifest we wrote
    more = {n: [max(set(range(100)) - p)] for n, p in now.items()}
    gone = {_k_at(jt.path, after, n, ps[0]) for n, ps in more.items()}
    res = jh.run_many([("delete_positions", jt.payload(positions=more)), ("read", jt.payload())])
    assert _bag(res[1]["rows"]) == _bag(r for r in unaware["read"] if r[0] not in gone)
