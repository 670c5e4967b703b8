"""Proof, deletion-vector part of the bad-input checks: a corrupt, truncated or missing DV index file
or index manifest of a Java-written DV table gives a CorruptMetadataError / MissingFileError naming the file and
the problem, and nothing is written (reads, writes, metadata-only commits)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ops.errors import CorruptMetadataError, MissingFileError
from tests.interop import java_harness as jh
from tests.table.bad_input_cases import Damage, check_damage, latest_snapshot_json, truncate

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

ROWS = pa.table({"pt": pa.array(["a"]), "id": pa.array([1000], pa.int32()), "v": pa.array(["n"]),
                 "n": pa.array([1], pa.int64())})


def _live_index_file(d: Path) -> str:
    from paimon_ops.format import manifest as mf

    snap = latest_snapshot_json(d)
    entries, _ = mf.read_index_manifest((d / "manifest" / snap["indexManifest"]).read_bytes(), "x")
    biggest = max(entries, key=lambda e: e.file_size)
    return f"index/{biggest.file_name}"


def _then(path_of, fn):
    def apply(d: Path) -> str:
        rel = path_of(d)
        fn(d / rel)
        return rel
    return apply


def _bad_magic(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[5:9] = struct.pack(">i", 12345)  # first entry: length at 1..4, magic at 5..8
    p.write_bytes(bytes(data))


def _bad_bitmap_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[1 + 8 + 1] ^= 0xFF  # inside the first entry's bitmap: the stored CRC no longer matches
    p.write_bytes(bytes(data))


def _bad_version(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[0] = 7
    p.write_bytes(bytes(data))


def _index_manifest(d: Path) -> str:
    return "manifest/" + latest_snapshot_json(d)["indexManifest"]


CASES = [
    # DV files are only read by readers: writes and commits of new level-0 files do not touch them
    Damage("dv bitmap garbled (CRC)", _then(_live_index_file, _bad_bitmap_byte), CorruptMetadataError,
           "CRC mismatch in 32-bit deletion vector at offset 1", write_fails=False),
    Damage("dv file truncated", _then(_live_index_file, lambda p: truncate(p, 0.5)), CorruptMetadataError,
           "truncated|outside the file", write_fails=False),
    Damage("dv magic wrong", _then(_live_index_file, _bad_magic), CorruptMetadataError, "bad deletion-vector magic",
           write_fails=False),
    Damage("dv version wrong", _then(_live_index_file, _bad_version), CorruptMetadataError,
           "unsupported deletion-vector index file version 7", write_fails=False),
    Damage("dv file missing", _then(_live_index_file, Path.unlink), MissingFileError, "does not exist",
           write_fails=False),
    # the index manifest is metadata every commit reads
    Damage("index manifest truncated", _then(_index_manifest, lambda p: truncate(p, 0.5)), CorruptMetadataError,
           "not a readable Avro"),
    Damage("index manifest missing", _then(_index_manifest, Path.unlink), MissingFileError, "does not exist"),
]


@pytest.mark.parametrize("damage", CASES, ids=[c.name for c in CASES])
def test_bad_dv_input_is_reported_and_nothing_written(java_tables, tmp_path, damage):
    case = java_tables["pk_dv"]
    wh = tmp_path / "wh"
    shutil.copytree(case.path, wh / "db.db" / "pk_dv")
    check_damage(str(wh), "db.pk_dv", wh / "db.db" / "pk_dv", damage, ROWS)
