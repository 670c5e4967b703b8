"""Proof: the inspection CLI on Java-written tables — `tables`, `snapshots`, `tags`, `files` (with the
deletion-vector cardinality of a DV table), `options`, in text and `--json` — and the exit code / message for an
unknown table."""
from __future__ import annotations

import json

import pytest

from paimon_ops.cli import main
from tests.cli.json_contract import validated
from tests.interop import java_harness as jh
from tests.interop.conftest import DB

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]


def _run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys, *argv):
    """The --json output, validated against the JSON Schema it declares (paimon_ops/schemas)."""
    rc, out, err = _run(capsys, *argv, "--json")
    assert rc == 0, err
    return validated(json.loads(out))


def test_tables(java_tables, capsys):
    wh = java_tables["pk_dv"].warehouse
    rows = {r["table"]: r for r in _json(capsys, "tables", wh)["rows"]}
    assert {f"{DB}.{n}" for n in ("pk_dv", "pk_lv", "ap", "ap_b", "py_pk")} <= set(rows)
    dv = rows[f"{DB}.pk_dv"]
    assert (dv["primary_keys"], dv["partition_keys"], dv["bucket"], dv["latest_snapshot"], dv["error"]) == \
        (["pt", "id"], ["pt"], 2, 6, None)
    ap = rows[f"{DB}.ap"]
    assert (ap["primary_keys"], ap["bucket"]) == ([], -1)
    rc, out, _ = _run(capsys, "tables", wh)
    assert rc == 0
    header, *lines = out.splitlines()
    assert header.split() == ["table", "primary_keys", "partition_keys", "bucket", "latest_snapshot", "error"]
    line = next(ln for ln in lines if ln.startswith(f"{DB}.pk_dv "))
    assert line.split() == [f"{DB}.pk_dv", "pt,id", "pt", "2", "6"]


def test_snapshots_and_tags(java_tables, capsys):
    case = java_tables["pk_dv"]
    snaps = _json(capsys, "snapshots", case.warehouse, case.identifier)["rows"]
    java = case.scans
    assert [(s["id"], s["kind"]) for s in snaps] == [(i, java[("snapshot", i)]["commit_kind"]) for i in range(1, 7)]
    assert all(s["schema_id"] == 0 and s["commit_user"] for s in snaps)
    assert snaps[0]["total_records"] == 120 and snaps[0]["delta_records"] == 120
    rc, out, _ = _run(capsys, "snapshots", case.warehouse, case.identifier)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "kind", "schema_id"] and len(lines) == 7
    assert lines[2].split()[:2] == ["2", "COMPACT"]

    tags = _json(capsys, "tags", case.warehouse, case.identifier)["rows"]
    assert [(t["name"], t["snapshot_id"]) for t in tags] == [("t4", 4)]
    rc, out, _ = _run(capsys, "tags", case.warehouse, case.identifier)
    assert out.splitlines()[1].split()[:2] == ["t4", "4"]
    lv = java_tables["pk_lv"]  # t3 was created by Java with a retention time: tagCreateTime / tagTimeRetained
    tags = {t["name"]: t for t in _json(capsys, "tags", lv.warehouse, lv.identifier)["rows"]}
    assert (tags["t2"]["snapshot_id"], tags["t2"]["create_time"], tags["t2"]["time_retained_s"]) == (2, None, None)
    assert (tags["t3"]["snapshot_id"], tags["t3"]["time_retained_s"]) == (3, 86400)
    assert tags["t3"]["create_time"][:4].isdigit() and tags["t3"]["create_time"].endswith("Z")  # Java's local time, in
    # the table's tag zone (UTC: no tag.automatic-creation zone set)
    rc, out, _ = _run(capsys, "tags", case.warehouse, f"{DB}.pk_pu")
    assert rc == 0 and out.strip() == "(none)"


@pytest.mark.parametrize("sel", [(), ("--snapshot", "4"), ("--tag", "t4")], ids=["latest", "snapshot", "tag"])
def test_files_show_dv_cardinality(java_tables, capsys, sel):
    case = java_tables["pk_dv"]
    key = ("snapshot", 6) if not sel else (("snapshot", 4) if sel[0] == "--snapshot" else ("tag", "t4"))
    js = case.scans[key]
    card = {r["data_file"]: r["cardinality"] for i in js["index_files"] for r in i["dv_ranges"]}
    assert card, "the DV table must have deletion vectors here"
    payload = _json(capsys, "files", case.warehouse, case.identifier, *sel)
    assert payload["snapshot_id"] == js["snapshot_id"]
    got = {f["file"]: f for f in payload["rows"]}
    assert set(got) == {f["file_name"] for f in js["files"]}
    for jf in js["files"]:
        f = got[jf["file_name"]]
        assert (f["partition"], f["bucket"], f["level"], f["rows"], f["size"], f["min_seq"], f["max_seq"]) == \
            ({"pt": jf["partition"][0]}, jf["bucket"], jf["level"], jf["row_count"], jf["file_size"], jf["min_seq"],
             jf["max_seq"])
        assert f["deleted_rows"] == card.get(jf["file_name"], 0)

    rc, out, _ = _run(capsys, "files", case.warehouse, case.identifier, *sel)
    assert rc == 0
    lines = out.splitlines()
    total = sum(f["row_count"] for f in js["files"])
    assert lines[0].startswith(f"snapshot {js['snapshot_id']}: {len(js['files'])} files, {total} rows")
    assert lines[1].split() == ["partition", "bucket", "level", "file", "rows", "size", "deleted_rows"]
    for ln in lines[2:]:
        cols = ln.split()
        name = cols[3]
        assert int(cols[-1]) == card.get(name, 0), ln


def test_files_partitions_are_typed_values(java_tables, capsys):
    """A DATE partition (Java writes its directory as the epoch-day number, legacy names) is {"d": "2024-01-01"} in
    --json, as Java renders the value; the text shows it the same way."""
    case = java_tables["pk_pu"]
    key = max(k for k in case.scans if k[0] == "snapshot")
    js = case.scans[key]
    payload = _json(capsys, "files", case.warehouse, case.identifier)
    assert {f["file"]: f["partition"] for f in payload["rows"]} == \
        {jf["file_name"]: {"d": jf["partition"][0]} for jf in js["files"]}
    assert all(not jf["partition_path"].startswith("d=20") for jf in js["files"])  # the directory is the day number
    rc, out, _ = _run(capsys, "files", case.warehouse, case.identifier)
    assert rc == 0 and all(ln.split()[0].startswith("d=20") for ln in out.splitlines()[2:])


def test_options(java_tables, capsys):
    case = java_tables["pk_agg"]
    p = _json(capsys, "options", case.warehouse, case.identifier)
    assert p["table"] == case.identifier and p["schema_id"] == 0
    assert p["primary_keys"] == ["p", "k"] and p["partition_keys"] == ["p"]
    assert [(f["name"], f["type"]) for f in p["fields"]][:1] == [("p", "DECIMAL(10, 2) NOT NULL")]
    options = {r["option"]: r["value"] for r in p["rows"]}
    assert options["merge-engine"] == "aggregation" and options["fields.a.aggregate-function"] == "sum"
    rc, out, _ = _run(capsys, "options", case.warehouse, case.identifier)
    assert rc == 0
    assert out.splitlines()[0].startswith(f"{case.identifier} at ")
    assert "primary keys: p, k" in out and "partition keys: p" in out
    assert any(ln.split() == ["merge-engine", "aggregation"] for ln in out.splitlines())


def test_unknown_table_tag_snapshot(java_tables, capsys):
    wh = java_tables["pk_dv"].warehouse
    for cmd in ("snapshots", "tags", "files", "options"):
        for extra in ((), ("--json",)):
            rc, out, err = _run(capsys, cmd, wh, f"{DB}.no_such_table", *extra)
            # text: nothing on stdout; --json: the error as a JSON object on stdout too
            assert rc == 2 and (out == "" if not extra else json.loads(out)["error"]["type"] == "TableNotFoundError")
            assert "db.no_such_table" in err and "not found" in err
    rc, _, err = _run(capsys, "files", wh, f"{DB}.pk_dv", "--tag", "nope")
    assert rc == 2 and "'nope'" in err
    rc, _, err = _run(capsys, "files", wh, f"{DB}.pk_dv", "--snapshot", "99")
    assert rc == 2 and "snapshot-99" in err
    rc, _, err = _run(capsys, "options", wh, "not-an-identifier")
    assert rc == 2 and "not-an-identifier" in err
