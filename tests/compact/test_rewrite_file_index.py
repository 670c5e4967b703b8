"""rewrite-file-index (Java's rewrite_file_index), proven against Java Paimon 0.9:

* the codec: for the same data file, our bloom filter is byte for byte the one Java 0.9 wrote, and Java's own index
  reader answers every query on our bitmap as on its own;
* the operation: Java writes an append table without file indexes, the options change (a new schema, as ALTER TABLE
  SET writes it), rewrite-file-index re-indexes every file (dry run: each file with its reason) in one COMPACT
  commit; Java 0.9's FileIndexFormat reader opens every new index (embedded in the manifest and in `.index` files),
  answers equality queries exactly as the data says (bitmap) or as our filter predicts (bloom), and a filtered Java
  read plans no file for a value no file holds — it uses the index — where before the rewrite it planned every
  file; Java and pypaimon-rust read identical rows; a rerun does nothing; a Java write commits on top.

Bad input, one line, exit 2, nothing changed: a primary-key table, an index type paimon-ops does not write, a column
the table does not have."""
from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_ops.format import file_index as fi
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

pytestmark = [pytest.mark.java]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
PLAIN = {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": [], "options": {"bucket": "2", "bucket-key": "id"}}
INDEXED = {**PLAIN, "options": {**PLAIN["options"], "file-index.bloom-filter.columns": "v",
                                "file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "1 b"}}


def _rows(n: int):
    return [[p, i + 100 * n, f"w{n}-{i}" if i % 5 else None] for p in ("a", "b") for i in range(15)]


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """db.plain: an append table Java wrote without file indexes; db.indexed: one Java wrote with a bloom filter on v
    and a bitmap on id in `.index` files; db.pk: a primary-key table."""
    wh = tmp_path_factory.mktemp("file_index") / "wh"
    plain, indexed, pk = (JavaTable(wh, "db", n) for n in ("plain", "indexed", "pk"))
    batches = [{"rows": _rows(n)} for n in range(3)]
    jh.run_many([("create_table", plain.payload(schema=PLAIN)), ("write", plain.payload(batches=batches)),
                 ("create_table", indexed.payload(schema=INDEXED)), ("write", indexed.payload(batches=batches)),
                 ("create_table", pk.payload(schema={**PLAIN, "primary_keys": ["pt", "id"], "options": {"bucket": "1"}})),
                 ("write", pk.payload(batches=batches[:1]))])
    return wh


@pytest.fixture
def wh(java_src, tmp_path) -> Path:
    dst = tmp_path / "wh"
    shutil.copytree(java_src, dst)
    return dst


def _key(row) -> str:
    return json.dumps(row)


def _set_options(wh: Path, name: str, **options: str) -> None:
    """The options change as Java's ALTER TABLE SET writes it: a new schema file."""
    table = FileStoreTable(str(wh / "db.db" / name))
    s = table.schema
    assert table.schemas.commit(dataclasses.replace(s, id=s.id + 1, options={**s.options, **options}))


def test_our_bloom_filter_is_javas_and_java_reads_our_bitmap(wh):
    t = JavaTable(wh, "db", "indexed")
    files = t.call("scan")["files"]
    assert files and all(f["extra_files"] for f in files)
    for f in files:
        data_path = t.path / f["file_path"]
        java = fi.read_file_index((data_path.parent / f["extra_files"][0]).read_bytes(), f["file_name"])
        rows = pq.ParquetFile(data_path).read()
        assert fi.bloom_filter(rows.column("v"), "VARCHAR") == java["v"]["bloom-filter"]  # byte for byte
        ours = fi.bitmap_index(rows.column("id"), "INTEGER")
        for value in set(rows.column("id").to_pylist()) | {-1, 10_000}:
            assert fi.bitmap_rows(ours, "INTEGER", value) == fi.bitmap_rows(java["id"]["bitmap"], "INTEGER", value)


def _java_index(t: JavaTable, queries) -> dict:
    return {f["file_name"]: f for f in t.call("file_index", queries=queries)["files"]}


def test_rewrite_after_the_options_change_and_java_uses_the_new_indexes(wh):
    t = JavaTable(wh, "db", "plain")
    before = Counter(map(_key, t.call("read")["rows"]))
    files = t.call("scan")["files"]
    absent = ["v", "w1-7x"]  # within the min / max statistics of the files of the second write: only an index skips
    planned = t.call("read", filter_equal=absent)["files"]
    assert planned > 0  # (files of the second write whose statistics cannot exclude it)
    # a bitmap small enough for the manifest entry (nulls included), then a bloom filter in `.index` files
    _set_options(wh, "plain", **{"file-index.bitmap.columns": "v", "file-index.in-manifest-threshold": "4 kb"})
    dry = cli("rewrite-file-index", wh, "db.plain", "--dry-run")
    assert dry.code == 0, dry.err
    for f in files:
        line = next(ln for ln in dry.out.splitlines() if f["file_name"] in ln)
        assert f"partition {f['partition_path'].rstrip('/')}, bucket {f['bucket']}" in line and "bitmap(v)" in line
    done = cli("rewrite-file-index", wh, "db.plain", "--json")
    assert done.code == 0, done.err
    report = done.json
    assert report["details"]["reindexed"] == len(files) and report["details"]["embedded"] == len(files)
    assert t.call("snapshots")["snapshots"][-1]["commitKind"] == "COMPACT"
    assert t.call("read", filter_equal=absent)["files"] == 0  # Java skips those files by our index now
    rows = t.call("read")["rows"]
    some = next(r for r in rows if r[2] is not None)
    hit = t.call("read", filter_equal=["v", some[2]])
    holding = {r[0] for r in rows if r[2] == some[2]}  # the value is written once per partition: one file each
    assert hit["files"] == len(holding) == 2 and some in hit["rows"]
    assert Counter(map(_key, t.call("read")["rows"])) == before

    _set_options(wh, "plain", **{"file-index.bloom-filter.columns": "v", "file-index.bloom-filter.v.fpp": "0.01",
                                 "file-index.bloom-filter.v.items": "5000", "file-index.bitmap.columns": "id"})
    done = cli("rewrite-file-index", wh, "db.plain", "--json").json
    assert done["details"]["index_files_written"] == len(files)
    values = sorted({r[2] for r in t.call("read")["rows"] if r[2] is not None})
    queries = [["v", v] for v in values[:4]] + [["v", "nowhere-1"], ["v", "nowhere-2"], ["id", 0], ["id", -5]]
    javas = _java_index(t, queries)
    table = FileStoreTable(str(t.path))
    from paimon_ops.table.scan import TableScanner
    for f in TableScanner(table).scan_latest().files:
        java = javas[f.name]
        assert java["index"] == f.meta.extra_files[-1] and java["columns"] == {"id": ["bitmap"], "v": ["bloom-filter"]}
        rows = pq.ParquetFile(f.path).read()
        ours = fi.read_file_index(Path(f.path).with_name(f.meta.extra_files[-1]).read_bytes())
        bloom = fi.BloomFilter.deserialize(ours["v"]["bloom-filter"])
        for (col, value), answer in zip(queries, java["results"]):
            if col == "id":  # the bitmap is exact
                assert answer == (value in rows.column("id").to_pylist()), (f.name, value)
            else:  # the bloom filter: Java answers what our filter holds, and never misses a value the file has
                assert answer == bloom.might_contain(int(fi.hashes(pa.array([value]), "VARCHAR")[0]))
                assert answer or value not in rows.column("v").to_pylist()
    assert Counter(map(_key, t.call("read")["rows"])) == before
    got = pu.rust_read(str(wh), "db.plain")
    assert Counter(_key([r["pt"], r["id"], r["v"]]) for r in got.to_pylist()) == before
    again = cli("rewrite-file-index", wh, "db.plain", "--json").json  # indexed as configured: nothing to do
    assert again["snapshot_id"] is None and again["details"]["files_to_reindex"] == 0
    w = t.call("write", batches=[{"rows": [["a", 7777, "late"]]}], first_commit_identifier=30)
    assert w["latest_snapshot_id"] == done["snapshot_id"] + 1


def test_the_dagster_job_rewrites_the_indexes(wh):
    """The paimon_rewrite_file_index job on a real Dagster instance: a dry run changes nothing, the run re-indexes
    every file, and Java's index reader finds the bitmap in each."""
    from dagster import instance_for_test

    from paimon_ops.dagster import build_paimon_definitions
    from tests.dagster.util import run_job
    t = JavaTable(wh, "db", "plain")
    _set_options(wh, "plain", **{"file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "4 kb"})
    defs = build_paimon_definitions(str(wh))
    latest = t.call("snapshots")["latest"]
    with instance_for_test() as instance:
        assert run_job(defs, "paimon_rewrite_file_index", "db.plain", instance,
                       {"dry_run": True, "rewrite_file_index": {}}).success
        assert t.call("snapshots")["latest"] == latest
        assert run_job(defs, "paimon_rewrite_file_index", "db.plain", instance).success
    files = t.call("file_index", queries=[["id", 0]])["files"]
    assert files and all(f["index"] == "embedded" and f["columns"] == {"id": ["bitmap"]} for f in files)
    assert sum(f["results"][0] for f in files) == 2  # id 0 is written in both partitions, one file each


@pytest.mark.parametrize("case", ["primary-key", "index-type", "column"])
def test_bad_input_is_one_line_and_changes_nothing(wh, case):
    table, want = "db.plain", ""
    if case == "primary-key":
        table, want = "db.pk", "primary-key table"
    elif case == "index-type":
        _set_options(wh, "plain", **{"file-index.bsi.columns": "id"})
        want = "file-index.bsi.columns"
    else:
        _set_options(wh, "plain", **{"file-index.bitmap.columns": "nope"})
        want = "file-index.bitmap.columns"
    digest = tree_digest(str(wh))
    r = cli("rewrite-file-index", wh, table)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and want in r.err, r.err
    assert tree_digest(str(wh)) == digest
