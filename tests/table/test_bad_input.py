"""Proof: bad input gives a clear error (the right paimon_ops.errors class, naming the path and the
problem) and nothing is written — for reads, writes and metadata-only commits alike.

The table is written by pypaimon 2.1.0 (an independent writer); each case damages a fresh copy.
Deletion-vector files are covered in tests/interop/test_bad_input_dv.py (needs a Java-written DV table).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ops.errors import CorruptMetadataError, MissingFileError, TableNotFoundError
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from tests import pypaimon_util as pu
from tests.table.bad_input_cases import (
    Damage,
    a_data_file,
    check_damage,
    first_manifest,
    garble,
    latest_snapshot_json,
    listing,
    truncate,
)

IDENT = "db.t"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("bad-src") / "wh"
    t = pu.create_table(str(wh), IDENT, pa.schema([("p", pa.string()), ("id", pa.int32()), ("v", pa.string())]),
                        partition_keys=["p"], primary_keys=["p", "id"], options={"bucket": "2"})
    pu.write(t, {"p": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]})
    pu.write(t, {"p": ["a", "c"], "id": [2, 4], "v": ["y2", "w"]})
    return wh


@pytest.fixture
def copy(pristine, tmp_path) -> tuple[str, Path]:
    wh = tmp_path / "wh"
    shutil.copytree(pristine, wh)
    return str(wh), wh / "db.db" / "t"


ROWS = pa.table({"p": pa.array(["a", "z"]), "id": pa.array([9, 10], pa.int32()), "v": pa.array(["n", "m"])})


def _snap(d: Path) -> str:
    n = latest_snapshot_json(d)["id"]
    return f"snapshot/snapshot-{n}"


def _write(d: Path, rel: str, data: bytes) -> str:
    (d / rel).write_bytes(data)
    return rel


def _edit_json(d: Path, rel: str, fn) -> str:
    obj = json.loads((d / rel).read_text())
    fn(obj)
    (d / rel).write_text(json.dumps(obj))
    return rel


def _unknown_type(obj):
    obj["fields"][2]["type"] = "STRINGY(3)"


def _delete(d: Path, rel: str) -> str:
    (d / rel).unlink()
    return rel


def _then(path_of, damage_fn):
    """Resolve the target path first, then damage it (damaging may change what path_of would find)."""
    def apply(d: Path) -> str:
        rel = path_of(d)
        damage_fn(d / rel)
        return rel
    return apply


def _data_file(d: Path) -> str:
    return str(a_data_file(d).relative_to(d))


CASES = [
    Damage("snapshot garbage", lambda d: _write(d, _snap(d), b"\x00\xffnot json"), CorruptMetadataError,
           r"not UTF-8|not valid JSON"),
    Damage("snapshot truncated", _then(_snap, truncate), CorruptMetadataError,
           "not valid JSON"),
    Damage("snapshot without baseManifestList",
           lambda d: _edit_json(d, _snap(d), lambda o: o.pop("baseManifestList")), CorruptMetadataError,
           "lacks required key 'baseManifestList'"),
    Damage("manifest list truncated",
           lambda d: (truncate(d / "manifest" / latest_snapshot_json(d)["deltaManifestList"], 0.6),
                      "manifest/" + latest_snapshot_json(d)["deltaManifestList"])[1],
           CorruptMetadataError, "not a readable Avro"),
    Damage("manifest list missing",
           lambda d: _delete(d, "manifest/" + latest_snapshot_json(d)["baseManifestList"]), MissingFileError,
           "does not exist"),
    Damage("manifest truncated", lambda d: (truncate(d / "manifest" / first_manifest(d), 0.7),
                                            "manifest/" + first_manifest(d))[1],
           CorruptMetadataError, "not a readable Avro"),
    Damage("manifest garbled", lambda d: (garble(d / "manifest" / first_manifest(d), 0.8),
                                          "manifest/" + first_manifest(d))[1],
           CorruptMetadataError, "not a readable Avro"),
    Damage("manifest list holds a manifest",
           lambda d: _write(d, "manifest/" + latest_snapshot_json(d)["deltaManifestList"],
                            (d / "manifest" / first_manifest(d)).read_bytes()),
           CorruptMetadataError, "manifest list lacks required field"),
    Damage("snapshot empty", lambda d: _write(d, _snap(d), b""), CorruptMetadataError, "not valid JSON"),
    Damage("snapshot not an object", lambda d: _write(d, _snap(d), b"[1, 2]"), CorruptMetadataError,
           "not an object"),
    Damage("manifest missing", lambda d: _delete(d, "manifest/" + first_manifest(d)), MissingFileError,
           "does not exist"),
    Damage("schema garbage", lambda d: _write(d, "schema/schema-0", b"{\"version\": 3, \"id\": 0, \"fie"),
           CorruptMetadataError, "schema is not valid JSON"),
    Damage("schema without fields", lambda d: _edit_json(d, "schema/schema-0", lambda o: o.pop("fields")),
           CorruptMetadataError, "lacks required key 'fields'"),
    Damage("schema unknown type", lambda d: _edit_json(d, "schema/schema-0", _unknown_type), CorruptMetadataError,
           "unknown data type 'STRINGY\\(3\\)'"),
    Damage("data file missing", _then(_data_file, Path.unlink), MissingFileError, "does not exist", write_fails=False),
    Damage("data file truncated", _then(_data_file, truncate),
           CorruptMetadataError, r"\S", write_fails=False),
]


@pytest.mark.parametrize("damage", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_reported_and_nothing_written(copy, damage):
    wh, table_dir = copy
    check_damage(wh, IDENT, table_dir, damage, ROWS)


def test_unknown_table_and_warehouse(copy, tmp_path):
    wh, table_dir = copy
    before = listing(wh)
    with pytest.raises(TableNotFoundError, match=r"'db.nope' not found") as ei:
        FileSystemCatalog(wh).get_table("db.nope")
    assert "db.t" in str(ei.value)  # lists what does exist
    with pytest.raises(TableNotFoundError, match="no schema/ directory"):
        FileStoreTable(str(table_dir.parent / "nope"))
    with pytest.raises(TableNotFoundError, match="does not exist"):
        FileSystemCatalog(str(tmp_path / "no-warehouse"))
    # a directory that is not a Paimon table
    (table_dir.parent / "plain").mkdir()
    with pytest.raises(TableNotFoundError, match="no schema/ directory"):
        FileSystemCatalog(wh).get_table("db.plain")
    (table_dir.parent / "plain").rmdir()
    assert listing(wh) == before
