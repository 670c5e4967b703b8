"""Rescale of tables written by pypaimon 2.1.0: before/after read by pypaimon 2.1.0 and pypaimon-rust 0.4.0, every
key in the bucket pypaimon's own writer gives it at the new count, pypaimon writes on top, stale plans refused."""
from __future__ import annotations

import json

import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.compact.rescale import plan_rescale
from paimon_ops.errors import InvalidArgumentError, UnsupportedError
from paimon_ops.execution.plan import Plan
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu
from tests.compact.test_postpone import SCHEMA, _batch, _key_buckets, _write, py_rows, rust_rows

HISTORY = [
    [_batch("x", list(range(60)), list(range(60)), [f"v{i}" for i in range(60)]),
     _batch("y", list(range(25)), list(range(25)), ["y"] * 25)],
    [_batch("x", [1, 2, 70], [10, 20, 700], ["u", "u", "n"], ["+U", "-D", "+I"])],
]


def _twin_buckets(warehouse: str, n: int, opts: dict) -> dict:
    """Where pypaimon's own writer puts every key with `n` buckets (the same history, bucket = n)."""
    t = pu.create_table(warehouse, f"db.twin{n}", SCHEMA, ["pt"], ["pt", "id"], {**opts, "bucket": str(n)})
    _write(t, HISTORY)
    return _key_buckets(FileSystemCatalog(warehouse).get_table(f"db.twin{n}"))


@pytest.mark.parametrize("new,dv", [(4, False), (3, True), (1, False)])
def test_rescale_fixed_bucket_table(warehouse, new, dv):
    """2 -> 4 writes each new bucket straight from its one old bucket; 2 -> 3 and 2 -> 1 merge the runs of both."""
    opts = {"rowkind.field": "rk", **({"deletion-vectors.enabled": "true"} if dv else {})}
    t = pu.create_table(warehouse, "db.t", SCHEMA, ["pt"], ["pt", "id"], {**opts, "bucket": "2"})
    _write(t, HISTORY)
    cat = FileSystemCatalog(warehouse)
    if dv:
        po.Table(cat.get_table("db.t")).maintenance.compact().execute(runner=LocalRunner())  # DV readers see level >= 1 only
        _write(t, [[_batch("x", [3, 4], [33, 44], ["dv", "dv"])]])
        po.Table(cat.get_table("db.t")).maintenance.compact(mode="minor").execute(runner=LocalRunner())
    before = py_rows(warehouse, "db.t")
    assert before and rust_rows(warehouse, "db.t") == before
    plan = plan_rescale(cat.get_table("db.t"), bucket_num=new)
    assert plan.schema_change and plan.details["bucket_option"] == f"2 -> {new}"
    assert {p["merge_step"] for p in plan.details["partitions"]} == {new % 2 != 0}  # fed by both old buckets
    report = Plan.from_json(plan.to_json()).execute(runner=LocalRunner())
    table = cat.get_table("db.t")
    assert table.schema.id == 1 and table.schema.options["bucket"] == str(new)
    snap = table.snapshots.latest()
    assert snap.commit_kind == "OVERWRITE" and snap.schema_id == 1 and report.snapshot_id == snap.id
    assert py_rows(warehouse, "db.t") == before and rust_rows(warehouse, "db.t") == before
    result = TableScanner(table).scan_latest()
    assert {f.total_buckets for f in result.files} == {new}
    assert not [ie for ie in result.index_entries if ie.index_type == "DELETION_VECTORS"]
    max_level = max(f.level for f in result.files)
    assert {f.level for f in result.files} == {max_level} and max_level >= 1
    ours = _key_buckets(table)
    assert ours == {k: v for k, v in _twin_buckets(warehouse, new, opts).items() if k in ours}
    # pypaimon writes into the rescaled table (the new option) and reads
    _write(pu.get_table(warehouse, "db.t"), [[_batch("x", [1, 99], [111, 999], ["after", "after"])]])
    if dv:
        po.Table(cat.get_table("db.t")).maintenance.compact(mode="minor").execute(runner=LocalRunner())
    after = py_rows(warehouse, "db.t")
    assert {(r["id"], r["a"]) for r in after if r["pt"] == "x"} >= {(1, 111), (99, 999)}
    assert rust_rows(warehouse, "db.t") == after
    assert {f.total_buckets for f in TableScanner(cat.get_table("db.t")).scan_latest().files} == {new}
    # nothing left to do: the same rescale again plans nothing
    assert plan_rescale(cat.get_table("db.t"), bucket_num=new).is_empty


def test_rescale_chosen_partitions_of_a_postpone_table(warehouse):
    """bucket = -2: the count is per partition (no schema change); postpone rows are left for the next move, which
    routes them by the new count."""
    opts = {"rowkind.field": "rk", "postpone.default-bucket-num": "2"}
    t = pu.create_table(warehouse, "db.pp", SCHEMA, ["pt"], ["pt", "id"], {**opts, "bucket": "-2"})
    _write(t, HISTORY)
    cat = FileSystemCatalog(warehouse)
    po.Table(cat.get_table("db.pp")).maintenance.compact_postpone().execute(runner=LocalRunner())
    _write(t, [[_batch("x", [5, 80], [55, 800], ["pending", "pending"])]])  # waits in bucket-postpone
    before = py_rows(warehouse, "db.pp")
    with pytest.raises(InvalidArgumentError, match="must provide the resulting bucket number"):
        plan_rescale(cat.get_table("db.pp"))
    report = po.Table(cat.get_table("db.pp")).maintenance.rescale(bucket_num=5, partitions=[{"pt": "x"}]).execute(runner=LocalRunner())
    assert report.details["bucket_option"] == -2 and report.details["split_tasks"] == 2
    table = cat.get_table("db.pp")
    assert table.schema.id == 0
    assert py_rows(warehouse, "db.pp") == before and rust_rows(warehouse, "db.pp") == before
    counts = {}
    for f in TableScanner(table).scan_latest().files:
        counts.setdefault(TableScanner(table).partition_dir(f.partition), set()).add(f.total_buckets)
    assert counts == {"pt=x/": {5, -2}, "pt=y/": {2}}  # the pending postpone file kept in pt=x
    po.Table(table).maintenance.compact_postpone().execute(runner=LocalRunner())
    ours = _key_buckets(cat.get_table("db.pp"))
    twin5 = _twin_buckets(warehouse, 5, {"rowkind.field": "rk"})
    assert {k: v for k, v in ours.items() if k[0] == "x" and k in twin5} == {k: v for k, v in twin5.items()
                                                                              if k[0] == "x" and k in ours}
    assert {v[1] for k, v in ours.items() if k[0] == "x"} == {5}
    rows = {(r["pt"], r["id"]): r["a"] for r in py_rows(warehouse, "db.pp")}
    assert rows[("x", 5)] == 55 and rows[("x", 80)] == 800
    assert rust_rows(warehouse, "db.pp") == py_rows(warehouse, "db.pp")


def test_concurrent_writer_makes_the_rescale_plan_stale(warehouse, capsys):
    t = pu.create_table(warehouse, "db.s", SCHEMA, ["pt"], ["pt", "id"], {"rowkind.field": "rk", "bucket": "2"})
    _write(t, HISTORY)
    cat = FileSystemCatalog(warehouse)
    assert main(["rescale", warehouse, "db.s", "--bucket-num", "4", "--partition", "pt=x", "--dry-run", "--json"]) == 0
    plan_json = capsys.readouterr().out
    path = f"{warehouse}/rescale.json"
    with open(path, "w") as f:
        f.write(plan_json)
    listing = sorted(st.path for st in cat.get_table("db.s").io.walk_files(cat.get_table("db.s").root))
    # a writer commits into the partition after the plan was made
    _write(pu.get_table(warehouse, "db.s"), [[_batch("x", [7], [7000], ["concurrent"])]])
    assert main(["apply", path, "--local"]) == 2
    err = capsys.readouterr().err
    assert "stale" in err.lower() or "changed" in err
    table = cat.get_table("db.s")
    assert table.schema.id == 0  # refused before the schema change
    now = sorted(st.path for st in table.io.walk_files(table.root))
    assert len(now) > len(listing)  # the writer's files only
    assert {(r["id"], r["a"]) for r in py_rows(warehouse, "db.s") if r["pt"] == "x"} >= {(7, 7000)}
    # a writer into another partition does not block it
    plan = plan_rescale(table, bucket_num=4, partitions=[{"pt": "x"}])
    _write(pu.get_table(warehouse, "db.s"), [[_batch("y", [90], [9], ["other partition"])]])
    before = py_rows(warehouse, "db.s")
    plan.execute(runner=LocalRunner())
    assert py_rows(warehouse, "db.s") == before == rust_rows(warehouse, "db.s")


def test_commit_refuses_a_writer_that_lands_during_the_rewrite(warehouse):
    """The plan is checked before anything is written; a commit into the partition while the tasks run is caught by
    the commit itself, and everything the rescale wrote is removed."""
    from paimon_ops.execution.executor import execute
    from paimon_ops.execution.runner import LocalRunner as LR

    t = pu.create_table(warehouse, "db.c", SCHEMA, ["pt"], ["pt", "id"], {"rowkind.field": "rk", "bucket": "2"})
    _write(t, HISTORY)
    table = FileSystemCatalog(warehouse).get_table("db.c")
    plan = plan_rescale(table, bucket_num=3)

    class Interleaving(LR):
        def run(self, *a, **kw):
            out = super().run(*a, **kw)
            _write(pu.get_table(warehouse, "db.c"), [[_batch("x", [8], [8], ["during"])]])
            return out

    files_before = {st.path for st in table.io.walk_files(table.root)}
    from paimon_ops.errors import CommitConflictError
    with pytest.raises(CommitConflictError, match="changed"):
        execute(plan, runner=Interleaving())
    left = {st.path for st in table.io.walk_files(table.root)} - files_before
    assert all("/schema/" in p or "/manifest/" in p or "/snapshot/" in p or p.endswith(".parquet") for p in left)
    live = {f.path for f in TableScanner(table.refresh()).scan_latest().files}
    assert not [p for p in left if p.endswith(".parquet") and p not in live]  # no rescale output left behind


def test_refusals(warehouse):
    t = pu.create_table(warehouse, "db.dyn", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "-1"})
    pu.write(t, {"pt": ["x"], "id": [1], "a": [1], "b": ["b"], "rk": ["+I"]})
    with pytest.raises(UnsupportedError, match="dynamic-bucket"):
        plan_rescale(FileSystemCatalog(warehouse).get_table("db.dyn"), bucket_num=4)
    pu.create_table(warehouse, "db.empty", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "2"})
    with pytest.raises(InvalidArgumentError, match="no snapshot"):
        plan_rescale(FileSystemCatalog(warehouse).get_table("db.empty"), bucket_num=4)
    assert main(["rescale", warehouse, "db.empty", "--bucket-num", "-3"]) == 2
    out = main(["rescale", warehouse, "db.dyn", "--bucket-num", "2", "--json"])
    assert out == 2


def test_rescale_on_spark(warehouse, spark):
    from paimon_ops.execution.runner import SparkRunner
    t = pu.create_table(warehouse, "db.sp", SCHEMA, ["pt"], ["pt", "id"], {"rowkind.field": "rk", "bucket": "2"})
    _write(t, HISTORY)
    before = py_rows(warehouse, "db.sp")
    report = po.Table(FileSystemCatalog(warehouse).get_table("db.sp")).maintenance.rescale(bucket_num=3).execute(runner=SparkRunner(spark))
    assert report.snapshot_id and json.loads(json.dumps(report.to_dict()))["details"]["files_out"] >= 3
    assert py_rows(warehouse, "db.sp") == before == rust_rows(warehouse, "db.sp")


def test_rescale_fixed_bucket_append_table(warehouse):
    import pyarrow as pa
    s = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("a", pa.int64()), ("b", pa.string())])
    t = pu.create_table(warehouse, "db.app", s, ["pt"], options={"bucket": "2", "bucket-key": "id"})
    for w in ("w1", "w2"):  # the same ids twice: an append table keeps both rows
        pu.write(t, {"pt": ["x"] * 30, "id": list(range(30)), "a": list(range(30)), "b": [w] * 30})
    before = py_rows(warehouse, "db.app")
    po.Table(FileSystemCatalog(warehouse).get_table("db.app")).maintenance.rescale(bucket_num=3).execute(runner=LocalRunner())
    assert py_rows(warehouse, "db.app") == before == rust_rows(warehouse, "db.app") and len(before) == 60
    files = TableScanner(FileSystemCatalog(warehouse).get_table("db.app")).scan_latest().files
    assert {(f.bucket, f.total_buckets, f.level) for f in files} == {(0, 3, 0), (1, 3, 0), (2, 3, 0)}
    pu.write(pu.get_table(warehouse, "db.app"), {"pt": ["x"], "id": [1], "a": [5], "b": ["after"]})
    assert len(py_rows(warehouse, "db.app")) == 61
