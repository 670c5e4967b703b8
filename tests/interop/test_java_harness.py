"""End-to-end checks of the Java Paimon 0.9 interop harness itself.

These prove that the harness builds (jar download + javac), that Java can create and write tables
(several LSM levels, deletion vectors, compaction, merge engines, append tables), and that the
scan / read / snapshot / tag / expire / orphan commands report what is on disk.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaHarnessError, JavaTable

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]


@pytest.fixture(scope="module")
def classpath() -> str:
    return jh.ensure_built()


def _sorted(rows):
    return sorted(rows, key=repr)


def test_build_and_ping(classpath):
    assert jh.BRIDGE_JAR_NAME in classpath
    assert "hadoop-client-api" in classpath and "hadoop-client-runtime" in classpath
    # the build is cached: a second call returns the same classpath without rebuilding
    assert jh.ensure_built() == classpath
    assert jh.run("ping") == {"ok": True, "paimon_version": "0.9"}


def test_error_is_reported_with_stderr_tail(classpath, tmp_path):
    with pytest.raises(JavaHarnessError) as ei:
        jh.run("scan", {"warehouse": str(tmp_path), "database": "nodb", "table": "missing"})
    msg = str(ei.value)
    assert "'scan' failed" in msg and "does not exist" in msg
    assert "SLF4J:" not in msg
    with pytest.raises(JavaHarnessError, match="unknown command"):
        jh.run("no_such_command", {})


def test_pk_deletion_vectors_levels_and_dv_ranges(classpath, tmp_path):
    """Partitioned PK table with DVs: 3 batches (updates, deletes) give files on levels 5/4/3 and DV index files."""
    t = JavaTable(tmp_path / "wh", "db", "dv")
    created = t.create(
        [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")],
        partition_keys=["pt"],
        primary_keys=["pt", "id"],
        options={"bucket": 1, "deletion-vectors.enabled": True},
    )
    assert created["bucket_mode"] == "HASH_FIXED"
    assert Path(created["table_path"]) == t.path

    b1 = {"rows": [[p, i, f"v{i}", i] for p in ("a", "b") for i in range(100)]}
    b2 = {
        "rows": [["a", i, f"w{i}", i * 10] for i in range(20)] + [["b", 5, None, None]],
        "kinds": ["+U"] * 20 + ["-D"],
    }
    b3 = {
        "rows": [["a", i, f"x{i}", -i] for i in range(10, 15)] + [["a", 50, None, None]],
        "kinds": ["+I"] * 5 + ["-D"],
    }
    w = t.write([b1, b2, b3])
    # DV tables use lookup compaction: every batch commit is APPEND followed by COMPACT
    assert [b["snapshot_ids"] for b in w["batches"]] == [[1, 2], [3, 4], [5, 6]]
    assert w["latest_snapshot_id"] == 6

    scan, read, snaps, scan4 = jh.run_many(
        [
            ("scan", t.payload()),
            ("read", t.payload()),
            ("snapshots", t.payload()),
            ("scan", t.payload(snapshot_id=4)),
        ]
    )

    assert scan["snapshot_id"] == 6 and scan["commit_kind"] == "COMPACT"
    files = scan["files"]
    by_name = {f["file_name"]: f for f in files}
    levels_a = sorted(f["level"] for f in files if f["partition_path"] == "pt=a")
    assert levels_a == [3, 4, 5]
    assert all(f["level"] > 0 for f in files)  # level-0 files were all compacted away
    for f in files:
        assert f["partition"] == [f["partition_path"].split("=", 1)[1]]
        assert f["bucket"] == 0 and f["total_buckets"] == 1
        assert f["file_name"].startswith("data-") and f["file_name"].endswith(".parquet")
        assert (t.path / f["file_path"]).is_file()
        assert f["file_size"] == (t.path / f["file_path"]).stat().st_size
        assert f["min_seq"] <= f["max_seq"]
        assert f["file_source"] in ("APPEND", "COMPACT")
        assert f["delete_row_count"] == 0  # DV compaction drops retract rows
    l5 = next(f for f in files if f["partition_path"] == "pt=a" and f["level"] == 5)
    assert (l5["row_count"], l5["min_key"], l5["max_key"]) == (100, [0], [99])

    idx = {i["partition_path"]: i for i in scan["index_files"]}
    assert set(idx) == {"pt=a", "pt=b"}
    for i in idx.values():
        assert i["index_type"] == "DELETION_VECTORS"
        assert i["row_count"] == len(i["dv_ranges"])
        assert (t.path / "index" / i["file_name"]).stat().st_size == i["file_size"]
        for r in i["dv_ranges"]:
            assert r["data_file"] in by_name
            assert r["cardinality"] == len(r["positions"]) > 0
            assert r["offset"] >= 1 and r["length"] > 0
    dv_a = {by_name[r["data_file"]]["level"]: r["positions"] for r in idx["pt=a"]["dv_ranges"]}
    # level 5 (batch 1): ids 0..19 updated by batch 2, id 50 deleted by batch 3
    assert dv_a[5] == list(range(20)) + [50]
    # level 4 (batch 2, ids 0..19): ids 10..14 rewritten by batch 3
    assert dv_a[4] == list(range(10, 15))
    assert [r["positions"] for r in idx["pt=b"]["dv_ranges"]] == [[5]]

    expected = {("b", i): ["b", i, f"v{i}", i] for i in range(100) if i != 5}
    expected.update({("a", i): ["a", i, f"v{i}", i] for i in range(100) if i != 50})
    expected.update({("a", i): ["a", i, f"w{i}", i * 10] for i in range(20)})
    expected.update({("a", i): ["a", i, f"x{i}", -i] for i in range(10, 15)})
    assert _sorted(read["rows"]) == _sorted(expected.values())
    assert set(read["row_kinds"]) == {"+I"}
    assert read["columns"] == ["pt", "id", "v", "n"]

    assert [(s["id"], s["commitKind"]) for s in snaps["snapshots"]] == [
        (1, "APPEND"), (2, "COMPACT"), (3, "APPEND"), (4, "COMPACT"), (5, "APPEND"), (6, "COMPACT"),
    ]
    last = snaps["snapshots"][-1]
    assert last["indexManifest"] and last["baseManifestList"] and last["deltaManifestList"]
    assert snaps["tags"] == {} and (snaps["earliest"], snaps["latest"]) == (1, 6)

    # time travel: after batch 2 there were only levels 5 and 4 in pt=a
    assert sorted(f["level"] for f in scan4["files"] if f["partition_path"] == "pt=a") == [4, 5]

    assert t.check_files() == []


def test_level0_visible_in_store_scan_and_full_compaction(classpath, tmp_path):
    """Non-DV PK table: store scan lists level-0 files; write(compact=True) moves a bucket to the max level."""
    t = JavaTable(tmp_path / "wh", "db", "pk")
    t.create(
        [("k", "INT NOT NULL"), ("v", "STRING")],
        primary_keys=["k"],
        options={"bucket": 1, "file.format": "orc"},
    )
    w = t.write(
        [
            {"rows": [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]},
            {"rows": [[2, "b2"], [3, None]], "kinds": ["+U", "-D"]},
        ]
    )
    assert [b["snapshot_ids"] for b in w["batches"]] == [[1], [2]]
    s = t.scan()
    assert {f["level"] for f in s["files"]} == {0}
    assert any(f["delete_row_count"] == 1 for f in s["files"])  # the -D row is kept in level 0
    assert all(f["file_name"].endswith(".orc") and f["total_buckets"] == 1 for f in s["files"])
    assert s["index_files"] == []

    t.write([{"rows": [[5, "e"]], "compact": True}, {"rows": [[1, "a3"]]}])
    s, read = jh.run_many([("scan", t.payload()), ("read", t.payload())])
    levels = sorted(f["level"] for f in s["files"])
    assert levels[-1] == 5 and levels.count(0) == 1
    assert all(f["delete_row_count"] == 0 for f in s["files"] if f["level"] == 5)
    assert _sorted(read["rows"]) == [[1, "a3"], [2, "b2"], [4, "d"], [5, "e"]]

    # dedicated full compaction of every bucket (COMPACT snapshot only)
    c = t.compact()
    assert c["compacted_units"] >= 1 and len(c["snapshot_ids"]) == 1
    s = t.scan()
    assert {f["level"] for f in s["files"]} == {5}
    assert s["commit_kind"] == "COMPACT"


def test_merge_engines_and_types(classpath, tmp_path):
    """partial-update, aggregation (several levels with a small compaction trigger) and all scalar/nested types."""
    wh = tmp_path / "wh"
    pu = JavaTable(wh, "db", "pu")
    agg = JavaTable(wh, "db", "agg")
    ty = JavaTable(wh, "db", "types")
    fields = [("p", "INT"), ("k", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING")]
    batches = [
        {"rows": [[1, 1, 10, "a"], [1, 2, 20, None], [2, 3, 30, "c"]]},
        {"rows": [[1, 1, None, "a2"], [1, 2, 5, "b2"]]},
        {"rows": [[1, 1, 1, None], [2, 3, 3, "c3"]]},
    ]
    type_fields = [
        ("d", "DATE NOT NULL"),
        ("dec", "DECIMAL(10, 2) NOT NULL"),
        ("id", "BIGINT NOT NULL"),
        ("s", "STRING"),
        ("i", "INT"),
        ("ti", "TINYINT"),
        ("si", "SMALLINT"),
        ("f", "FLOAT"),
        ("db", "DOUBLE"),
        ("bo", "BOOLEAN"),
        ("by", "BYTES"),
        ("ts3", "TIMESTAMP(3)"),
        ("ts6", "TIMESTAMP(6)"),
        ("big", "DECIMAL(38, 10)"),
        ("arr", "ARRAY<INT>"),
        ("m", "MAP<STRING, DOUBLE>"),
        ("r", "ROW<x INT, y STRING>"),
    ]
    type_rows = [
        ["2024-01-01", "12.30", 1, "héllo", 7, -3, 300, 1.5, 1e10, True, "AAEC/w==",
         "2024-01-01 10:00:00", "2024-01-01 10:00:30.123456", "12345678901234567890.0123456789",
         [1, None, 3], [["x", 1.25], ["y", None]], [1, "r"]],
        ["2023-12-31", "-0.01", 2, None, None, None, None, None, None, None, None,
         None, None, None, None, None, None],
    ]
    results = jh.run_many(
        [
            ("create_table", pu.payload(schema={"fields": [dict(name=n, type=ty_) for n, ty_ in fields],
                                                "partition_keys": ["p"], "primary_keys": ["p", "k"],
                                                "options": {"bucket": "1", "merge-engine": "partial-update"}})),
            ("write", pu.payload(batches=batches)),
            ("read", pu.payload()),
            ("create_table", agg.payload(schema={"fields": [dict(name=n, type=ty_) for n, ty_ in fields],
                                                 "partition_keys": ["p"], "primary_keys": ["p", "k"],
                                                 "options": {"bucket": "2", "merge-engine": "aggregation",
                                                             "fields.a.aggregate-function": "sum",
                                                             "fields.b.aggregate-function": "max",
                                                             "num-sorted-run.compaction-trigger": "2"}})),
            ("write", agg.payload(batches=batches)),
            ("read", agg.payload()),
            ("scan", agg.payload()),
            ("create_table", ty.payload(schema={"fields": [dict(name=n, type=ty_) for n, ty_ in type_fields],
                                                "partition_keys": ["d", "dec"], "primary_keys": ["d", "dec", "id"],
                                                "options": {"bucket": "1"}})),
            ("write", ty.payload(batches=[{"rows": type_rows}])),
            ("read", ty.payload()),
            ("scan", ty.payload()),
        ]
    )
    pu_read, agg_read, agg_scan, ty_read, ty_scan = results[2], results[5], results[6], results[9], results[10]
    assert _sorted(pu_read["rows"]) == [[1, 1, 1, "a2"], [1, 2, 5, "b2"], [2, 3, 3, "c3"]]
    assert _sorted(agg_read["rows"]) == [[1, 1, 11, "a2"], [1, 2, 25, "b2"], [2, 3, 33, "c3"]]
    # with num-sorted-run.compaction-trigger=2 universal compaction produces an intermediate level
    assert {f["level"] for f in agg_scan["files"]} - {0}
    assert {f["partition_path"] for f in agg_scan["files"]} == {"p=1", "p=2"}

    assert _sorted(ty_read["rows"]) == _sorted(type_rows)
    # 0.9 renders partition paths "legacy": DATE as its epoch-day number, DECIMAL plain with scale
    assert sorted((f["partition_path"], f["partition"]) for f in ty_scan["files"]) == [
        ("d=19722/dec=-0.01", ["2023-12-31", "-0.01"]),
        ("d=19723/dec=12.30", ["2024-01-01", "12.30"]),
    ]


def test_append_tables_tags_expire_orphans(classpath, tmp_path):
    """Unaware-bucket append table: compaction, tags, expiry, check_files and orphan removal."""
    t = JavaTable(tmp_path / "wh", "db", "ap")
    t.create([("k", "INT"), ("dt", "STRING")], partition_keys=["dt"], options={"bucket": -1})
    batches = [{"rows": [[i, "x"], [i, "y"]]} for i in range(4)]
    w = t.write(batches)
    assert w["latest_snapshot_id"] == 4
    s = t.scan()
    assert len(s["files"]) == 8 and {f["bucket"] for f in s["files"]} == {0}
    assert {f["total_buckets"] for f in s["files"]} == {-1}

    c = t.compact()  # full: one rewrite task per partition
    assert c.pop("elapsed_ms") >= 0 and c == {"compacted_units": 2, "snapshot_ids": [5]}
    t.create_tag("before_more", snapshot_id=3)
    t.write([{"rows": [[9, "x"]]}, {"rows": [[10, "x"]]}])  # snapshots 6 and 7
    s, snaps = jh.run_many([("scan", t.payload()), ("snapshots", t.payload())])
    assert sorted(f["row_count"] for f in s["files"]) == [1, 1, 4, 4]
    assert snaps["tags"] == {"before_more": 3}
    assert snaps["tag_snapshots"]["before_more"]["id"] == 3

    tagged = t.rows(tag="before_more")
    assert tagged == _sorted([[i, d] for i in range(3) for d in ("x", "y")])

    # snapshots are young (time_retained 1 h), so retain_max=2 decides: 1..5 go
    e = t.expire_snapshots(retain_min=1, retain_max=2, time_retained_ms=3_600_000)
    assert e["expired"] == 5 and (e["earliest"], e["latest"]) == (6, 7)
    assert t.check_files() == []  # the tag still protects the files of snapshot 3
    assert t.rows(tag="before_more") == tagged

    orphan = t.path / "dt=x" / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"junk")
    old = time.time() - 7200
    os.utime(orphan, (old, old))
    future = int(time.time() * 1000) + 60_000
    assert t.remove_orphans(older_than_ms=future, dry_run=True) == [str(orphan)]
    assert orphan.exists()
    t.delete_tag("before_more")
    assert t.check_files() == []
    assert t.remove_orphans(older_than_ms=future) == [str(orphan)]
    assert not orphan.exists()
    assert _sorted(t.read()["rows"]) == _sorted(
        [[i, d] for i in range(4) for d in ("x", "y")] + [[9, "x"], [10, "x"]]
    )
    # check_files notices a live data file that disappeared
    victim = t.path / s["files"][0]["file_path"]
    victim.unlink()
    missing = t.check_files()
    assert {(m["path"], m["kind"]) for m in missing} == {(str(victim), "data_file")}
    assert {m["referenced_by"] for m in missing} <= {"snapshot-6", "snapshot-7"}
