"""Errors speak the caller's words — command-line flags on the command line, keywords in Python —
and under --json an error is a JSON object on stdout as well as exit status 2."""
from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError, UnsafeOperationError, UnsupportedError
from paimon_ops.lifecycle.rollback import require_confirmation
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import TableWriter, create_table
from tests.cli.conftest import cli


def _err(r) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    [line] = [ln for ln in r.err.splitlines() if ln.startswith("paimon-ops: error:")]
    return line


def _write_only_table(wh) -> None:
    t = create_table(str(wh), "db.wo", [("k", "INT"), ("v", "STRING")], [], ["k"],
                     {"bucket": "1", "write-only": "true"})
    w = TableWriter(t)
    w.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    w.commit()


CASES = [
    # (argv after the warehouse, words that must appear, Python spellings that must not)
    (["remove-orphans", "shop.orders", "--min-age", "1 h"], ["--allow-short", "--min-age"], ["allow_short"]),
    (["rollback", "shop.orders", "--snapshot", "1"], ["--yes", "--dry-run"], ["confirm=True", "dry_run"]),
    (["compact", "shop.orders", "--mode", "small-files", "--local"], ["--mode full"], ["mode='full'"]),
    (["compact", "logs.events", "--mode", "sort", "--local"], ["--order-by"], ["order_by"]),
    (["expire-snapshots", "shop.orders", "--retain-min", "0", "--local"], ["--retain-min"], ["retain_min"]),
    (["create-tag", "shop.orders", "t1"], ["--replace"], ["replace_tag"]),
]


@pytest.mark.parametrize("argv,want,never", CASES, ids=[c[0][0] + "-" + c[1][0] for c in CASES])
def test_cli_errors_name_the_flags(sample, argv, want, never):
    _write_only_table(sample)
    if argv[0] == "create-tag":
        assert cli("create-tag", sample, "shop.orders", "t1", "--snapshot", "1").code == 0
    line = _err(cli(argv[0], sample, *argv[1:]))
    for w in want:
        assert w in line, line
    for n in never:
        assert n not in line, line


def test_rename_resume_flag(sample):
    assert cli("create-tag", sample, "shop.orders", "a").code == 0
    tags = sample / "shop.db" / "orders" / "tag"
    (tags / "tag-b").write_bytes((tags / "tag-a").read_bytes())  # an interrupted rename a -> b
    line = _err(cli("rename-tag", sample, "shop.orders", "a", "b"))
    assert "--resume" in line and "resume=True" not in line
    assert cli("rename-tag", sample, "shop.orders", "a", "b", "--resume").code == 0
    assert not (tags / "tag-a").exists() and (tags / "tag-b").exists()


def test_python_errors_name_the_keywords(sample):
    _write_only_table(sample)
    cat = FileSystemCatalog(str(sample))
    orders = cat.get_table("shop.orders")
    with pytest.raises(UnsafeOperationError, match=r"allow_short=True"):
        po.Table(orders).maintenance.remove_orphans(min_age=__import__("datetime").timedelta(hours=1)).execute()
    with pytest.raises(UnsafeOperationError, match=r"confirm=True"):
        require_confirmation(po.Table(orders).maintenance.rollback(snapshot_id=1), False)
    with pytest.raises(UnsupportedError, match=r"mode='full'"):
        po.Table(orders).maintenance.compact(mode="small-files").execute()
    po.Table(orders).tags.create("t1", snapshot_id=1).execute()
    with pytest.raises(InvalidArgumentError, match=r"replace=True"):
        po.Table(orders).tags.create("t1", snapshot_id=2).execute()


def test_json_errors_are_objects_on_stdout(sample):
    r = cli("rollback", sample, "shop.orders", "--snapshot", "1", "--json")
    assert r.code == 2
    err = r.json["error"]
    assert err["type"] == "UnsafeOperationError" and "--yes" in err["message"]
    r = cli("files", sample, "no.such", "--json")
    assert r.code == 2 and r.json["error"]["type"] == "TableNotFoundError"
    # an option error carries the option, a corrupt file its path
    snap = sample / "shop.db" / "orders" / "snapshot" / "snapshot-1"
    snap.write_text("{not json")
    r = cli("snapshots", sample, "shop.orders", "--json")
    assert r.code == 2 and r.json["error"]["path"].endswith("snapshot-1")
    schema_dir = sample / "logs.db" / "events" / "schema"
    latest = sorted(schema_dir.iterdir())[-1]
    latest.write_text(latest.read_text().replace('"bucket" : "-1"', '"bucket" : "x"'))
    r = cli("compact", sample, "logs.events", "--local", "--json")
    assert r.code == 2 and r.json["error"].get("option") == "bucket", r.out
