"""Proof: what we commit is read by Java Paimon 0.9 and by pypaimon 2.1.0 with identical results.

(a) metadata-only commits: a COMPACT commit that *upgrades* every level-0 file of a single-file bucket to the
    max level (DELETE at level 0 + ADD of the same file at the max level — what Java's own compaction does for
    a lone file without retract rows), and an APPEND commit with no changes at all. (An identical DELETE+ADD of
    one file in one commit is rejected by the delta self-check, which is also asserted.)
(b) commits of new data files we wrote ourselves on tables Java (or pypaimon) created: Java reads exactly the
    expected rows, ``check_files`` finds nothing missing, and Java can keep writing and compacting afterwards.
    pypaimon 2.1.0 cannot read *any* table whose manifests Java 0.9 wrote (it requires ``_VALUE_STATS_COLS``,
    a 1.0 field: KeyError in ``ManifestFileManager._get_value_stats_fields``), so pypaimon is the reader of
    the pypaimon-created tables only; Java reads both kinds.
Bucket assignment: after our rows, Java writes updates of the keys we wrote and compacts; its read must hold
exactly one row per key, and every key must live in exactly one bucket.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_ops.errors import CommitConflictError
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.format.types import arrow_schema
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from paimon_ops.table.writer import write_rows
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.conftest import DB, TYPE_PK, types_row
from tests.interop.interop_util import canon, jv, raw_rows, rows_of

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]


def _arrow(table: FileStoreTable, rows: list[list]) -> pa.Table:
    schema = arrow_schema(table.schema.row_type)
    return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)


def _py(v, t: pa.DataType):
    """A harness JSON value -> the Python value Arrow expects for type t."""
    if v is None:
        return None
    if pa.types.is_date(t):
        return dt.date.fromisoformat(v)
    if pa.types.is_time(t):
        return dt.time.fromisoformat(v)
    if pa.types.is_decimal(t):
        return Decimal(v)
    if pa.types.is_timestamp(t):
        return dt.datetime.fromisoformat(v)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return base64.b64decode(v)
    if pa.types.is_map(t):
        return [(_py(k, t.key_type), _py(x, t.item_type)) for k, x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _py(x, t.field(i).type) for i, x in enumerate(v)}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_py(x, t.value_type) for x in v]
    return v


def _py_rows(table: FileStoreTable, json_rows: list[list]) -> list[list]:
    types = [f.type for f in arrow_schema(table.schema.row_type)]
    return [[_py(v, t) for v, t in zip(r, types)] for r in json_rows]


def _keyed(table: FileStoreTable, rows: list[list]) -> dict[tuple, list]:
    names = table.schema.field_names
    idx = [names.index(k) for k in table.schema.primary_keys]
    return {tuple(json_key(r[i]) for i in idx): r for r in rows}


def json_key(v):
    return jv(v) if not isinstance(v, (str, int)) else v


def _one_bucket_per_key(table: FileStoreTable) -> None:
    """Every primary key of the latest snapshot lives in exactly one bucket (ours and Java's files alike)."""
    scanner = TableScanner(table)
    result = scanner.scan(table.snapshots.latest())
    names = table.schema.field_names
    idx = [names.index(k) for k in table.schema.primary_keys]
    where: dict[tuple, set[int]] = {}
    for f, rows in raw_rows(table, scanner, result):
        for r in rows:
            where.setdefault(tuple(r[i] for i in idx), set()).add(f.bucket)
    bad = {k: b for k, b in where.items() if len(b) > 1}
    assert not bad, f"keys spread over several buckets: {bad}"


def _pypaimon_rows(warehouse: str, ident: str) -> list[list]:
    t = pu.read(warehouse, ident)
    return canon(rows_of(t))


# ------------------------------------------------------------------------------------------------ (a)


def test_metadata_only_commits_are_read_by_java_and_pypaimon(java_tables):
    case = java_tables["meta_pk"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    scanner = TableScanner(table)
    base = table.snapshots.latest()
    result = scanner.scan(base)
    max_level = table.options.num_levels - 1
    per_bucket: dict[tuple, int] = {}
    for f in result.files:
        per_bucket[(f.partition, f.bucket)] = per_bucket.get((f.partition, f.bucket), 0) + 1
        assert f.level == 0 and not f.meta.delete_row_count
    assert set(per_bucket.values()) == {1}, "a level upgrade is only valid for a lone file per bucket"

    committer = FileStoreCommit(table)
    # identical DELETE + ADD of one file in one commit: rejected by the delta self-check, nothing written
    f0 = result.files[0]
    with pytest.raises(CommitConflictError, match="both added and deleted"):
        committer.commit(CommitChanges(data=(f0.entry(FileKind.DELETE), f0.entry(FileKind.ADD))), "COMPACT", base.id)
    assert table.snapshots.latest_id() == base.id

    changes = []
    for f in result.files:
        changes.append(f.entry(FileKind.DELETE))
        changes.append(ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets, f.meta.with_level(max_level)))
    upgraded = committer.commit(CommitChanges(data=tuple(changes)), "COMPACT", base.id)
    empty = FileStoreCommit(table).commit(CommitChanges(), "APPEND", upgraded.id)
    assert (upgraded.id, empty.id) == (base.id + 1, base.id + 2)
    assert upgraded.total_record_count == base.total_record_count and upgraded.delta_record_count == 0

    seed = canon(case.written)
    more = [["a", k, f"n{k}"] for k in range(15, 25)]
    expected = {(r[0], r[1]): r for r in case.written}
    expected.update({(r[0], r[1]): r for r in more})
    java = case.java
    scan_up, read_up, read_empty, snaps, missing, _, read_more, missing2 = jh.run_many([
        ("scan", java.payload(snapshot_id=upgraded.id)), ("read", java.payload(snapshot_id=upgraded.id)),
        ("read", java.payload(snapshot_id=empty.id)), ("snapshots", java.payload()), ("check_files", java.payload()),
        ("write", java.payload(batches=[{"rows": more, "compact": True}])), ("read", java.payload()),
        ("check_files", java.payload()),
    ])
    assert sorted((f["file_name"], f["level"]) for f in scan_up["files"]) ==\
        sorted((f.name, max_level) for f in result.files)
    assert canon(read_up["rows"]) == seed and canon(read_empty["rows"]) == seed
    assert [(s["id"], s["commitKind"]) for s in snaps["snapshots"]][-2:] == [(upgraded.id, "COMPACT"), (empty.id, "APPEND")]
    assert missing["missing"] == [] and missing2["missing"] == []
    assert canon(read_more["rows"]) == canon(expected.values())


def test_metadata_only_commit_on_pypaimon_table(tmp_path):
    wh = str(tmp_path / "wh")
    ident = f"{DB}.pyup"
    t = pu.create_table(wh, ident, pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"],
                        options={"bucket": "1"})
    pu.write(t, {"k": [3, 1, 2], "v": ["c", "a", "b"]})
    table = FileSystemCatalog(wh).get_table(ident)
    result = TableScanner(table).scan(table.snapshots.latest())
    (f,) = result.files
    top = table.options.num_levels - 1
    snap = FileStoreCommit(table).commit(CommitChanges(data=(
        f.entry(FileKind.DELETE), ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets,
                                                f.meta.with_level(top)))), "COMPACT", result.snapshot.id)
    rows = [[1, "a"], [2, "b"], [3, "c"]]
    assert _pypaimon_rows(wh, ident) == rows
    pu.write(pu.get_table(wh, ident), {"k": [2, 4], "v": ["B", "d"]})
    after = [[1, "a"], [2, "B"], [3, "c"], [4, "d"]]
    assert _pypaimon_rows(wh, ident) == after
    java = jh.JavaTable(wh, DB, "pyup")
    scan, read, read_now, missing = jh.run_many([("scan", java.payload(snapshot_id=snap.id)),
                                                 ("read", java.payload(snapshot_id=snap.id)),
                                                 ("read", java.payload()), ("check_files", java.payload())])
    assert [(x["file_name"], x["level"]) for x in scan["files"]] == [(f.name, top)]
    assert canon(read["rows"]) == rows and canon(read_now["rows"]) == after and missing["missing"] == []


# ------------------------------------------------------------------------------------------------ (b)


def test_our_rows_on_java_pk_table_all_partition_types(java_tables):
    """PK table (bucket 3) partitioned by INT, DATE, DECIMAL and STRING; value columns of several types."""
    case = java_tables["w_pk"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    seed = case.written
    expected = _keyed(table, seed)
    p1, p2 = (1, "2024-01-01", "1.10", "s"), (-7, "1999-12-31", "-0.05", "t t")
    p_new = (0, "2025-06-30", "99999999.99", "a/b=c %é#")  # escaping in the partition directory
    p_blank = (42, "1970-01-01", "0.00", "")                  # blank string -> __DEFAULT_PARTITION__ dir

    def row(p, i, tag, n=None):
        return [*p, i, f"{tag}{i}", n if n is not None else i * 7, i / 3, f"2030-01-0{i % 9 + 1} 00:00:00.000001",
                f"-{i}.5000", None if i % 3 else True]

    ours = [row(p1, i, "u") for i in range(0, 6)] + [row(p1, i, "new") for i in range(12, 30)] +\
        [row(p2, i, "p2", -i) for i in range(6, 9)] + [row(p_new, i, "x") for i in range(5)] +\
        [row(p_blank, i, "b") for i in range(3)] + [row(p1, 12, "again")]   # same key twice: last one wins
    deleted = [*p2, 11, None, None, None, None, None, None]
    batch = _arrow(table, _py_rows(table, ours + [deleted]))
    snap = write_rows(table, batch, row_kinds=[0] * len(ours) + [3])
    assert snap is not None and snap.commit_kind == "APPEND"
    for r in ours:
        expected[tuple(json_key(x) for x in (r[0], r[1], r[2], r[3], r[4]))] = r
    expected.pop((-7, "1999-12-31", "-0.05", "t t", 11))
    _one_bucket_per_key(table)

    # Java updates some of the keys we wrote (+ a delete of one of ours) and compacts every touched bucket
    java_batch = [row(p1, i, "java", 1) for i in (0, 12, 13, 29)] + [row(p_new, 2, "java", 2), row(p_blank, 1, "j", 3)]
    java_del = [*p_new, 4, None, None, None, None, None, None]
    java = case.java
    read1, missing1, w, read2, missing2, scan2 = jh.run_many([
        ("read", java.payload()), ("check_files", java.payload()),
        ("write", java.payload(batches=[{"rows": java_batch + [java_del], "kinds": ["+U"] * 6 + ["-D"],
                                         "compact": True}])),
        ("read", java.payload()), ("check_files", java.payload()), ("scan", java.payload()),
    ])
    assert canon(read1["rows"]) == canon(expected.values())
    assert missing1["missing"] == []
    for r in java_batch:
        expected[tuple(r[:5])] = r
    expected.pop((0, "2025-06-30", "99999999.99", "a/b=c %é#", 4))
    rows2 = read2["rows"]
    keys2 = [tuple(r[:5]) for r in rows2]
    assert len(keys2) == len(set(keys2)), "a key appears twice: our bucket differs from Java's"
    assert canon(rows2) == canon(expected.values())
    assert missing2["missing"] == []
    paths = {f["partition_path"] for f in scan2["files"]}
    assert "pi=0/pd=20269/pdec=99999999.99/ps=a%2Fb%3Dc %25é%23" in paths
    assert "pi=42/pd=0/pdec=0.00/ps=__DEFAULT_PARTITION__" in paths
    _one_bucket_per_key(table.refresh())


def test_our_rows_of_every_type_on_java_table(java_tables):
    """Keys, partitions and values of every scalar and nested type: Java reads our rows exactly, bucket 4."""
    case = java_tables["w_types"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    nk = len(TYPE_PK)
    expected = {json.dumps(r[:nk]): r for r in case.written}
    ours = [types_row(i, "ours") for i in range(6, 18)]
    write_rows(table, _arrow(table, _py_rows(table, ours)))
    expected.update({json.dumps(r[:nk]): r for r in ours})
    _one_bucket_per_key(table)
    later = [types_row(i, "later") for i in range(10, 20)]
    java = case.java
    read1, missing, _, read2, scan = jh.run_many([
        ("read", java.payload()), ("check_files", java.payload()),
        ("write", java.payload(batches=[{"rows": later, "compact": True}])), ("read", java.payload()),
        ("scan", java.payload())])
    assert canon(read1["rows"]) == canon(expected.values()) and missing["missing"] == []
    expected.update({json.dumps(r[:nk]): r for r in later})
    keys2 = [json.dumps(r[:nk]) for r in read2["rows"]]
    assert len(keys2) == len(set(keys2)), "a key appears twice: our bucket differs from Java's"
    assert canon(read2["rows"]) == canon(expected.values())
    assert "pb=false/pl=-5/pt=2024-01-01T10%3A01%3A05/pf=1.0E10/pti=0" in {f["partition_path"] for f in scan["files"]}


def test_our_rows_on_java_partial_update_table(java_tables):
    case = java_tables["w_pu"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    state = {(r[0], r[1]): list(r) for r in case.written}
    ours = [[1, 0, None, "b0"], [1, 0, 100, None], [2, 5, None, "b5"], [1, 9, 9, None], [1, 9, None, "n9"]]
    write_rows(table, _arrow(table, ours))
    for r in ours:
        cur = state.get((r[0], r[1]))
        state[(r[0], r[1])] = list(r) if cur is None else [v if v is not None else c for v, c in zip(r, cur)]
    java = case.java
    later = [[1, 9, None, "j9"], [2, 5, 55, None]]
    read1, missing, _, read2 = jh.run_many([
        ("read", java.payload()), ("check_files", java.payload()),
        ("write", java.payload(batches=[{"rows": later, "compact": True}])), ("read", java.payload())])
    assert canon(read1["rows"]) == canon(state.values()) and missing["missing"] == []
    for r in later:
        cur = state[(r[0], r[1])]
        state[(r[0], r[1])] = [v if v is not None else c for v, c in zip(r, cur)]
    assert canon(read2["rows"]) == canon(state.values())
    _one_bucket_per_key(table.refresh())


def test_our_rows_on_java_dv_table_become_visible_after_java_compaction(java_tables):
    """DV tables: batch readers skip level 0 (format.md §9), so our level-0 rows are invisible until Java's
    compaction rewrites them to level >= 1 with deletion vectors for the keys they supersede."""
    case = java_tables["w_dv"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    ours = [["a", k, f"ours{k}"] for k in range(5, 15)] + [["b", 0, None]]
    write_rows(table, _arrow(table, ours), row_kinds=[0] * 10 + [3])
    expected = {(r[0], r[1]): r for r in case.written}
    expected.update({(r[0], r[1]): r for r in ours[:10]})
    expected.pop(("b", 0))
    java = case.java
    read1, missing, _, _, read2, scan2 = jh.run_many([
        ("read", java.payload()), ("check_files", java.payload()),
        ("write", java.payload(batches=[{"rows": [["b", 3, "java3"]], "compact": True}])),
        ("compact", java.payload(full=False)),  # every bucket: lookup compaction moves our level-0 files up
        ("read", java.payload()), ("scan", java.payload())])
    assert canon(read1["rows"]) == canon(case.written) and missing["missing"] == []
    expected[("b", 3)] = ["b", 3, "java3"]
    assert canon(read2["rows"]) == canon(expected.values())
    assert {f["level"] for f in scan2["files"]} - {0} and any(i["dv_ranges"] for i in scan2["index_files"])
    # and our DV-aware raw read of the compacted snapshot agrees with Java
    t2 = table.refresh()
    sc = TableScanner(t2)
    res = sc.scan(t2.snapshots.latest())
    got = [r for f, rows in raw_rows(t2, sc, res, min_level=1) for r in rows]
    assert canon(got) == canon(read2["rows"])


@pytest.mark.parametrize("name", ["w_ap", "w_apb"])
def test_our_rows_on_java_append_tables(java_tables, name):
    case = java_tables[name]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    if name == "w_ap":
        ours = [["2024-02-01", 100 + k, f"o{k}"] for k in range(4)] + [[None, 7, "null partition"],
                                                                     ["2031-12-31", 1, None]]
        more = [["2024-02-02", 500, "java"]]
    else:
        ours = [["0.50", 100 + k, f"o{k}"] for k in range(6)] + [["3.25", 1, "x"], [None, None, "nulls"]]
        more = [["0.50", 100, "java"], ["3.25", 2, "j"]]
    write_rows(table, _arrow(table, _py_rows(table, ours)))
    expected = case.written + ours
    java = case.java
    if name == "w_ap":  # unaware-bucket tables compact with the dedicated command
        follow = [("write", java.payload(batches=[{"rows": more}])), ("compact", java.payload(full=True))]
    else:
        follow = [("write", java.payload(batches=[{"rows": more, "compact": True}]))]
    res = jh.run_many([("read", java.payload()), ("check_files", java.payload()), *follow,
                       ("read", java.payload()), ("check_files", java.payload()), ("scan", java.payload())])
    read1, missing1, read2, missing2, scan = res[0], res[1], res[-3], res[-2], res[-1]
    assert canon(read1["rows"]) == canon(expected) and missing1["missing"] == []
    assert canon(read2["rows"]) == canon(expected + more) and missing2["missing"] == []
    if name == "w_ap":
        assert "d=__DEFAULT_PARTITION__" in {f["partition_path"] for f in scan["files"]}
    else:  # bucket-key k: every k sits in one bucket, ours and Java's alike
        assert {f["total_buckets"] for f in scan["files"]} == {2}
        t2 = table.refresh()
        sc = TableScanner(t2)
        where: dict = {}
        for f, rows in raw_rows(t2, sc, sc.scan(t2.snapshots.latest())):
            for r in rows:
                where.setdefault(r[1], set()).add(f.bucket)
        assert all(len(b) == 1 for b in where.values()), where


def test_our_rows_on_pypaimon_tables(tmp_path):
    """pypaimon-created PK and append tables: we write, pypaimon and Java read, both keep writing."""
    wh = str(tmp_path / "wh")
    pk = pu.create_table(wh, f"{DB}.ppk", pa.schema([("p", pa.int32()), ("d", pa.date32()), ("id", pa.int64()),
                                                      ("v", pa.string())]),
                         partition_keys=["p", "d"], primary_keys=["p", "d", "id"], options={"bucket": "3"})
    day = dt.date(2024, 7, 1)
    pu.write(pk, {"p": [1] * 10, "d": [day] * 10, "id": list(range(10)), "v": [f"py{i}" for i in range(10)]})
    ap = pu.create_table(wh, f"{DB}.pap", pa.schema([("s", pa.string()), ("k", pa.int64())]),
                         partition_keys=["s"], options={"bucket": "-1"})
    pu.write(ap, {"s": ["x", "y"], "k": [1, 2]})

    cat = FileSystemCatalog(wh)
    tpk, tap = cat.get_table(f"{DB}.ppk"), cat.get_table(f"{DB}.pap")
    write_rows(tpk, {"p": [1, 1, 2], "d": [day, day, day], "id": [3, 20, 3], "v": ["ours3", "ours20", "p2"]})
    write_rows(tap, {"s": ["x", "z"], "k": [10, 11]})
    exp_pk = {(1, "2024-07-01", i): [1, "2024-07-01", i, f"py{i}"] for i in range(10)}
    exp_pk.update({(1, "2024-07-01", 3): [1, "2024-07-01", 3, "ours3"], (1, "2024-07-01", 20): [1, "2024-07-01", 20, "ours20"],
                   (2, "2024-07-01", 3): [2, "2024-07-01", 3, "p2"]})
    exp_ap = [["x", 1], ["y", 2], ["x", 10], ["z", 11]]
    assert _pypaimon_rows(wh, f"{DB}.ppk") == canon(exp_pk.values())
    assert _pypaimon_rows(wh, f"{DB}.pap") == canon(exp_ap)

    # pypaimon keeps writing on top of our snapshot (updates of keys we wrote)
    pu.write(pu.get_table(wh, f"{DB}.ppk"), {"p": [1, 2], "d": [day, day], "id": [20, 3], "v": ["py20", "py-p2"]})
    pu.write(pu.get_table(wh, f"{DB}.pap"), {"s": ["z"], "k": [12]})
    exp_pk[(1, "2024-07-01", 20)] = [1, "2024-07-01", 20, "py20"]
    exp_pk[(2, "2024-07-01", 3)] = [2, "2024-07-01", 3, "py-p2"]
    exp_ap.append(["z", 12])
    assert _pypaimon_rows(wh, f"{DB}.ppk") == canon(exp_pk.values())
    assert _pypaimon_rows(wh, f"{DB}.pap") == canon(exp_ap)
    _one_bucket_per_key(cat.get_table(f"{DB}.ppk"))

    # Java reads the same, writes an update of one of our keys, compacts, and still reads one row per key
    jpk, jap = jh.JavaTable(wh, DB, "ppk"), jh.JavaTable(wh, DB, "pap")
    r_pk, r_ap, m_pk, m_ap, _, r_pk2 = jh.run_many([
        ("read", jpk.payload()), ("read", jap.payload()), ("check_files", jpk.payload()),
        ("check_files", jap.payload()),
        ("write", jpk.payload(batches=[{"rows": [[1, "2024-07-01", 3, "java3"]], "compact": True}])),
        ("read", jpk.payload())])
    assert canon(r_pk["rows"]) == canon(exp_pk.values()) and canon(r_ap["rows"]) == canon(exp_ap)
    assert m_pk["missing"] == [] and m_ap["missing"] == []
    exp_pk[(1, "2024-07-01", 3)] = [1, "2024-07-01", 3, "java3"]
    assert canon(r_pk2["rows"]) == canon(exp_pk.values())
