"""The feature gate on tables pypaimon 2.1.0 writes: an operation on a table using a feature it does not
handle refuses in one line naming the feature (exit 2 on the command line) and changes nothing; operations that do
handle it run, and pypaimon 2.1.0 and pypaimon-rust 0.4.0 read the same rows as before."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ops as po
import paimon_ops.features as features
from paimon_ops.errors import UnsupportedError
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu

REPO = Path(__file__).resolve().parents[2]
S = pa.schema([("id", pa.int32()), ("a", pa.int64()), ("b", pa.string())])
COLS = ["id", "a", "b"]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> str:
    """One warehouse with every gated shape pypaimon 2.1.0 writes."""
    wh = str(tmp_path_factory.mktemp("gate") / "wh")
    os.makedirs(wh)
    rt = pu.create_table(wh, "db.rt", S, options={"row-tracking.enabled": "true"})
    pu.write(rt, {"id": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"]})
    pu.write(rt, {"id": [4, 5], "a": [4, 5], "b": ["u", "v"]})
    de = pu.create_table(wh, "db.de", S, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    pu.write(de, {"id": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"]})
    pu.write(de, {"id": [4, 5], "a": [4, 5], "b": ["u", "v"]})
    de = pu.get_table(wh, "db.de")
    wb = de.new_batch_write_builder()
    up = wb.new_update().with_update_type(["b"])
    c = wb.new_commit()
    c.commit(up.update_by_arrow_with_row_id(pa.table({"_ROW_ID": pa.array([0, 3], pa.int64()), "b": ["X", "U"]})))
    c.close()
    blob = pu.create_table(wh, "db.blob", pa.schema([("id", pa.int32()), ("pic", pa.large_binary())]),
                           options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                                    "blob-field": "pic"})
    pu.write(blob, {"id": [1, 2], "pic": [b"abc", b"defg"]})
    pu.write(blob, {"id": [3], "pic": [b"x" * 100]})
    pp = pu.create_table(wh, "db.pp", pa.schema([("id", pa.int32()), ("a", pa.int64())]), primary_keys=["id"],
                         options={"bucket": "-2"})
    pu.write(pp, {"id": [1, 2], "a": [1, 2]})
    return wh


@pytest.mark.parametrize("ident,feature", [("db.rt", "row tracking"), ("db.de", "row tracking"),
                                           ("db.blob", "row tracking")])
def test_compaction_refused_in_one_line_and_nothing_changes(shapes, ident, feature):
    """Row tracking: full and small-files compaction are handled (tests/interop/test_modern_rowtrack.py); sort and
    dv-ratio would change row ids and stay refused."""
    table_dir = Path(shapes) / "db.db" / ident.split(".")[1]
    before = _listing(table_dir)
    table = FileSystemCatalog(shapes).get_table(ident)
    for mode in ("dv-ratio", "sort"):
        with pytest.raises(UnsupportedError) as e:
            po.Table(table).maintenance.compact(mode=mode, order_by="id" if mode == "sort" else None).execute()
        msg = str(e.value)
        assert "\n" not in msg and feature in msg and ident in msg and "nothing was changed" in msg
    assert _listing(table_dir) == before


def test_cli_exits_2_naming_the_feature(shapes):
    table_dir = Path(shapes) / "db.db" / "de"
    before = _listing(table_dir)
    for args in (["compact", shapes, "db.de", "--mode", "dv-ratio"],
                 ["compact", shapes, "db.de", "--mode", "dv-ratio", "--dry-run", "--json"]):
        p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", *args], capture_output=True, text=True,
                           cwd=REPO, timeout=120)
        assert p.returncode == 2, p.stderr
        assert "row tracking" in p.stderr + p.stdout and "Traceback" not in p.stderr
        if "--json" in args:
            err = json.loads(p.stdout)["error"]
            assert err["type"] == "UnsupportedError" and "row tracking" in err["message"]
        else:
            assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) == 1
    assert _listing(table_dir) == before
    # postpone tables: compaction moves the waiting rows first (the postpone compaction, as Java's compact procedure
    # does); expiry handles them (reachability)
    pp_dir = Path(shapes) / "db.db" / "pp"
    before = _listing(pp_dir)
    for mode in ("full", "minor", "dv-ratio"):
        p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "compact", shapes, "db.pp", "--mode", mode,
                            "--dry-run", "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert p.returncode == 0 and json.loads(p.stdout)["operation"] == "compact_postpone", p.stderr
    assert _listing(pp_dir) == before
    p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "expire-snapshots", shapes, "db.pp", "--dry-run"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr


def test_every_operation_declares_its_gate():
    import paimon_ops.api as registry

    compact = registry.operation("compact")
    postpone_ops = {g.name for op in registry.OPERATIONS.values() for g in op.gates()
                    if g.handles_feature(features.POSTPONE)}
    assert {"compact_postpone", "rescale", "expire_snapshots", "remove_orphans"} <= postpone_ops
    assert {g.name for g in compact.gates()} <= postpone_ops  # real buckets compact as usual; waiting rows: refused
    assert compact.gate("full").handles_feature(features.ROW_TRACKING)
    assert not compact.gate("dv-ratio").handles_feature(features.ROW_TRACKING)
    assert not compact.gate("sort").handles_feature(features.DATA_EVOLUTION)
    assert registry.operation("expire_snapshots").gate().handles_feature(features.ROW_TRACKING)
    assert compact.gate(None) is None and compact.gate("bogus") is None  # a mode it does not declare: refused


def test_handled_operations_run_and_both_readers_agree(shapes, tmp_path):
    """Row tracking / data evolution / BLOB tables: tags, expiry, manifest compaction, rollback and orphan removal
    handle them (files are referenced from manifests like any other; first row ids and write columns survive every
    rewrite); pypaimon and pypaimon-rust read the same rows, and pypaimon writes on."""
    wh = str(tmp_path / "wh")
    shutil.copytree(shapes, wh)
    cases = {"db.rt": COLS, "db.de": COLS, "db.blob": ["id", "pic"]}
    for ident, cols in cases.items():
        cat = FileSystemCatalog(wh)
        table = cat.get_table(ident)
        latest = table.snapshots.latest_id()
        expected = pu.both_read(wh, ident, cols)
        first = pu.both_read(wh, ident, cols, snapshot_id=1)
        po.Table(table).tags.create("t1", snapshot_id=1).execute()
        po.Table(table).tags.create("t_last", snapshot_id=latest).execute()
        po.Table(table.refresh()).maintenance.compact_manifests().execute()
        assert pu.both_read(wh, ident, cols) == expected
        r = po.Table(table.refresh()).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=2 ** 45).execute()
        assert r.details["expired_snapshots"], (r.details, r.warnings)
        assert pu.both_read(wh, ident, cols) == expected
        assert pu.both_read(wh, ident, cols, tag="t1") == first
        assert pu.both_read(wh, ident, cols, tag="t_last") == expected
        # nothing is an orphan: every file is referenced
        orphans = po.Table(table.refresh()).maintenance.remove_orphans(older_than=2 ** 62 // 1_000_000, now=2 ** 62 // 1_000_000,
            allow_short=True).dry_run_report()
        assert not [f for f in orphans.files if "data-" in f.path], orphans.files
        po.Table(table.refresh()).maintenance.delete_tags(["t_last"]).execute()
        assert pu.both_read(wh, ident, cols) == expected
        po.Table(table.refresh()).maintenance.rollback(tag="t1").execute()  # (a rollback also drops newer tags, as in Java)
        assert pu.both_read(wh, ident, cols) == first
        assert pu.both_read(wh, ident, cols, tag="t1") == first
        if ident != "db.blob":
            pu.write(pu.get_table(wh, ident), {"id": [9], "a": [9], "b": ["after"]})
            assert pu.both_read(wh, ident, cols) == sorted(first + [(9, 9, "after")], key=lambda r: tuple((v is None, repr(v)) for v in r))


def test_newer_snapshot_format_refused(shapes, tmp_path):
    """A snapshot with a field paimon-ops does not know (a newer Paimon) may reference files through it: every
    deleting operation refuses, tags may still be created."""
    wh = str(tmp_path / "wh")
    shutil.copytree(shapes, wh)
    table = FileSystemCatalog(wh).get_table("db.rt")
    path = Path(table.snapshots.path(table.snapshots.latest_id()))
    obj = json.loads(path.read_text())
    obj["blobManifestList"] = "manifest-list-future-0"
    path.write_text(json.dumps(obj))
    table = table.refresh()
    for fn in (lambda: po.Table(table).maintenance.expire_snapshots(retain_min=1, retain_max=1).execute(),
               lambda: po.Table(table).maintenance.remove_orphans(allow_short=True, older_than=0).execute(),
               lambda: po.Table(table).maintenance.compact_manifests().execute()):
        with pytest.raises(UnsupportedError, match="newer snapshot format.*blobManifestList"):
            fn()
    po.Table(table).tags.create("still-fine").execute()


def test_dagster_check_reports_refused_operations(shapes):
    import paimon_ops.dagster.checks as checks
    from paimon_ops.dagster.spec import TableSpec
    table = FileSystemCatalog(shapes).get_table("db.de")
    spec = TableSpec("db.de", "db", "de", options=dict(table.options.raw))
    assert spec.gated and checks.FEATURES in checks.table_check_names(spec)
    [out] = checks.evaluate(spec, lambda: table, [checks.FEATURES], 0)
    assert not out.passed and out.severity.value == "WARN" and "compact:dv-ratio" in out.description
    assert "compact:full" not in out.description
    assert "row tracking" in out.description
    plain = TableSpec("db.x", "db", "x", options={"bucket": "2"})
    assert not plain.gated and checks.FEATURES not in checks.table_check_names(plain)
