"""Deletion-vector index files: Java-written vectors, an independent spec encoder, corruption handling."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from paimon_ops.errors import CorruptMetadataError
from paimon_ops.format.deletion_vectors import (
    MAGIC_32,
    MAGIC_64,
    MAX_POSITION_32,
    DeletionVector,
    DvRange,
    read_dv,
    read_dv_index_file,
    serialize_dv,
    write_dv_index_file,
)

PATH = "/warehouse/db.db/t/index/index-test-0"


JAVA_DV_DIR = Path(__file__).resolve().parent / "data" / "java-dv"  # from ../shared/testdata (Java's own tests)


@pytest.fixture(scope="module")
def java_dv() -> dict[str, bytes]:
    d = JAVA_DV_DIR
    return {"32": (d / "dvindex-32").read_bytes(), "64": (d / "dvindex-64").read_bytes()}


# ------------------------------------------------------------------ independent reference encoder (spec §8.1)
# Written from the RoaringFormatSpec and Java RoaringBitmap's runOptimize rules, sharing no code with the
# module: a container becomes a run container iff that is strictly smaller (array: 2*card bytes,
# bitset: 8192 bytes, run: 2 + 4*runs bytes).


def _runs(lows: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in lows:
        if runs and runs[-1][0] + runs[-1][1] + 1 == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((v, 0))
    return runs  # (start, length - 1)


def ref_portable32(values: list[int]) -> bytes:
    groups: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(groups)
    bodies: list[bytes] = []
    is_run: list[bool] = []
    for k in keys:
        lows = groups[k]
        runs = _runs(lows)
        plain_size = 2 * len(lows) if len(lows) <= 4096 else 8192
        run = plain_size > 2 + 4 * len(runs)
        is_run.append(run)
        if run:
            bodies.append(struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", start, length) for start, length in runs))
        elif len(lows) <= 4096:
            bodies.append(struct.pack(f"<{len(lows)}H", *lows))
        else:
            words = [0] * 1024
            for v in lows:
                words[v >> 6] |= 1 << (v & 63)
            bodies.append(struct.pack("<1024Q", *words))
    n = len(keys)
    out = bytearray()
    if any(is_run):
        out += struct.pack("<I", 12347 | ((n - 1) << 16))
        flags = bytearray((n + 7) // 8)
        for i, r in enumerate(is_run):
            if r:
                flags[i // 8] |= 1 << (i % 8)
        out += flags
    else:
        out += struct.pack("<II", 12346, n)
    for k in keys:
        out += struct.pack("<HH", k, len(groups[k]) - 1)
    if not any(is_run) or n >= 4:
        off = len(out) + 4 * n
        for b in bodies:
            out += struct.pack("<I", off)
            off += len(b)
    return bytes(out) + b"".join(bodies)


def ref_entry32(values: list[int]) -> bytes:
    payload = struct.pack(">i", MAGIC_32) + ref_portable32(values)
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


def ref_entry64(values: list[int]) -> bytes:
    """Java's dense OptimizedRoaringBitmap64 layout: every key 0..maxKey, empty bitmaps included."""
    vals = sorted(set(values))
    n_keys = (vals[-1] >> 32) + 1 if vals else 0
    bm = struct.pack("<q", n_keys)
    for key in range(n_keys):
        bm += struct.pack("<i", key) + ref_portable32([v & 0xFFFFFFFF for v in vals if v >> 32 == key])
    payload = struct.pack("<i", MAGIC_64) + bm
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


def _entry(payload: bytes) -> bytes:
    """Wrap magic+bitmap bytes into an entry with a valid length and CRC (for malformed-bitmap tests)."""
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


# ------------------------------------------------------------------------------------ Java-written files


def test_java_dvindex_32_decodes(java_dv: dict[str, bytes]) -> None:
    data = java_dv["32"]
    dv1 = read_dv(data, 1, 24, PATH)
    dv2 = read_dv(data, 33, 22, PATH)
    assert not dv1.is_64bit and not dv2.is_64bit
    assert dv1.positions().tolist() == [2, 3] and dv1.cardinality == 2
    assert dv2.positions().tolist() == [1] and dv2.cardinality == 1
    assert dv1.is_deleted(2) and dv1.is_deleted(3) and not dv1.is_deleted(1)
    assert read_dv(data, 33, None, PATH) == dv2
    # The file's data-file names live only in Java's manifest (not derivable); any names work here.
    ranges = [DvRange("a.parquet", 1, 24, 2), DvRange("b.parquet", 33, 22, 1)]
    dvs = read_dv_index_file(data, ranges, PATH)
    assert {k: v.positions().tolist() for k, v in dvs.items()} == {"a.parquet": [2, 3], "b.parquet": [1]}


def test_java_dvindex_64_decodes(java_dv: dict[str, bytes]) -> None:
    data = java_dv["64"]
    # f2 for 64-bit entries is the whole entry: 4 + L + 4.
    dv1 = read_dv(data, 1, 36 + 8, PATH)
    dv2 = read_dv(data, 45, len(data) - 45, PATH)
    assert dv1.is_64bit and dv2.is_64bit
    assert dv1.positions().tolist() == [2, 3]
    assert dv2.positions().tolist() == [1]


def test_java_dvindex_32_reencodes_byte_exact(java_dv: dict[str, bytes]) -> None:
    data, ranges = write_dv_index_file({"a": DeletionVector([2, 3]), "b": DeletionVector([1])}, bitmap64=False)
    assert data == java_dv["32"]
    assert ranges == [DvRange("a", 1, 24, 2), DvRange("b", 33, 22, 1)]
    # Decoding Java's bitmaps and writing them back is also byte-identical.
    decoded = read_dv_index_file(java_dv["32"], ranges, PATH)
    assert write_dv_index_file(decoded, bitmap64=False) == (java_dv["32"], ranges)
    # ...and equal to the spec-derived encoder.
    assert data == b"\x01" + ref_entry32([2, 3]) + ref_entry32([1])


def test_java_dvindex_64_reencodes_byte_exact(java_dv: dict[str, bytes]) -> None:
    dvs = {"a": DeletionVector([2, 3], bitmap64=True), "b": DeletionVector([1], bitmap64=True)}
    data, ranges = write_dv_index_file(dvs, bitmap64=True)
    assert data == java_dv["64"]
    assert ranges == [DvRange("a", 1, 44, 2), DvRange("b", 45, 42, 1)]
    assert ranges[1].offset == 1 + 4 + 36 + 4
    decoded = read_dv_index_file(java_dv["64"], ranges, PATH)
    assert write_dv_index_file(decoded, bitmap64=True) == (java_dv["64"], ranges)
    # 32-bit vectors written with bitmap64=True take Java's fromBitmapDeletionVector path: same bytes.
    as32 = {"a": DeletionVector([2, 3]), "b": DeletionVector([1])}
    assert write_dv_index_file(as32, bitmap64=True)[0] == java_dv["64"]
    assert data == b"\x01" + ref_entry64([2, 3]) + ref_entry64([1])


def test_java_dvindex_32_layout_by_hand(java_dv: dict[str, bytes]) -> None:
    data = java_dv["32"]
    assert data[0] == 1
    assert struct.unpack_from(">ii", data, 1) == (24, MAGIC_32)
    assert struct.unpack_from(">I", data, 1 + 4 + 24)[0] == zlib.crc32(data[5 : 5 + 24])
    assert struct.unpack_from(">ii", data, 33) == (22, MAGIC_32)
    assert len(data) == 33 + 4 + 22 + 4


# -------------------------------------------------------------------------------------------- corruption


def _raises(data: bytes, offset: int, length: int | None, *words: str) -> CorruptMetadataError:
    with pytest.raises(CorruptMetadataError) as ei:
        read_dv(data, offset, length, PATH)
    err = ei.value
    assert err.path == PATH and str(err).startswith(PATH + ": ")
    for w in words:
        assert w in str(err), str(err)
    return err


def test_flipped_crc_byte(java_dv: dict[str, bytes]) -> None:
    for key, off, length in (("32", 33, 22), ("64", 45, 42)):
        bad = bytearray(java_dv[key])
        bad[-1] ^= 0x01
        _raises(bytes(bad), off, length, "CRC", f"offset {off}")


def test_flipped_bitmap_byte_fails_crc(java_dv: dict[str, bytes]) -> None:
    bad = bytearray(java_dv["32"])
    bad[1 + 8 + 14] ^= 0x01  # a value inside the first bitmap
    _raises(bytes(bad), 1, 24, "CRC")


def test_truncated_file(java_dv: dict[str, bytes]) -> None:
    data = java_dv["32"]
    _raises(data[:-2], 33, 22, "truncated", "offset 33")
    _raises(data[:36], 33, 22, "outside the file")
    _raises(java_dv["64"][:-1], 45, 42, "truncated")
    _raises(b"", 1, 24, "empty")


def test_wrong_magic(java_dv: dict[str, bytes]) -> None:
    bad = bytearray(java_dv["32"])
    bad[5] ^= 0xFF
    _raises(bytes(bad), 1, 24, "magic", "offset 5")
    bad64 = bytearray(java_dv["64"])
    bad64[45 + 4 + 3] ^= 0x01
    _raises(bytes(bad64), 45, 42, "magic", "offset 49")


def test_wrong_version_byte(java_dv: dict[str, bytes]) -> None:
    bad = b"\x02" + java_dv["32"][1:]
    _raises(bad, 1, 24, "version 2", "offset 0")
    with pytest.raises(CorruptMetadataError, match="version"):
        read_dv_index_file(bad, [], PATH)


def test_length_mismatch(java_dv: dict[str, bytes]) -> None:
    _raises(java_dv["32"], 1, 25, "length field is 24", "says 25")
    # A 64-bit reader given L (the 32-bit meaning of f2) instead of the whole entry must refuse.
    _raises(java_dv["64"], 1, 36, "length field is 36", "says 36")
    _raises(java_dv["32"], 2, 24, "magic")  # wrong offset lands on garbage


def test_malformed_bitmap_with_valid_crc() -> None:
    garbage = b"\x01" + _entry(struct.pack(">i", MAGIC_32) + b"\x00" * 12)
    _raises(garbage, 1, None, "malformed", "cookie")
    trailing = b"\x01" + _entry(struct.pack(">i", MAGIC_32) + BitMap([7]).serialize() + b"\x00\x00")
    _raises(trailing, 1, None, "malformed")
    truncated_bm = BitMap(range(0, 100, 2)).serialize()[:-2]
    _raises(b"\x01" + _entry(struct.pack(">i", MAGIC_32) + truncated_bm), 1, None, "malformed", "truncated")
    # 64-bit keys must ascend (Java's OptimizedRoaringBitmap64.readKey).
    desc = struct.pack("<q", 2) + struct.pack("<i", 1) + BitMap([1]).serialize()
    desc += struct.pack("<i", 0) + BitMap([1]).serialize()
    _raises(b"\x01" + _entry(struct.pack("<i", MAGIC_64) + desc), 1, None, "malformed", "ascending")
    huge_count = struct.pack("<q", 1 << 40)
    _raises(b"\x01" + _entry(struct.pack("<i", MAGIC_64) + huge_count), 1, None, "bitmap count")


def test_index_file_cardinality_and_duplicates(java_dv: dict[str, bytes]) -> None:
    with pytest.raises(CorruptMetadataError, match="cardinality 3"):
        read_dv_index_file(java_dv["32"], [DvRange("a", 1, 24, 3)], PATH)
    with pytest.raises(CorruptMetadataError, match="more than one"):
        read_dv_index_file(java_dv["32"], [DvRange("a", 1, 24, 2), DvRange("a", 33, 22, 1)], PATH)
    # 0.9 manifests carry no cardinality.
    assert read_dv_index_file(java_dv["32"], [DvRange("a", 1, 24)], PATH)["a"].cardinality == 2


# ----------------------------------------------------------------------------------------- run_optimize


def test_add_built_bitmap_serialises_java_compact() -> None:
    dv = DeletionVector()
    for i in range(10_000):
        dv.delete(i)
    raw = BitMap()
    for i in range(10_000):
        raw.add(i)
    assert len(raw.serialize()) == 8208  # pyroaring without run_optimize: a bitset container
    entry, length = serialize_dv(dv, bitmap64=False)
    bitmap = entry[8:-4]
    # one run container: cookie|flags|header(key 0, card-1 9999)|1 run (0, 9999) -> 15 bytes, as Java writes
    assert bitmap == bytes.fromhex("3b300000" "01" "0000" "0f27" "0100" "0000" "0f27")
    assert length == 4 + 15 and entry == ref_entry32(list(range(10_000)))
    entry64, length64 = serialize_dv(DeletionVector(range(10_000), bitmap64=True), bitmap64=True)
    assert entry64 == ref_entry64(list(range(10_000))) and length64 == len(entry64)


def test_run_optimize_tie_stays_array() -> None:
    # card == 2*runs + 1: array (10 bytes) is not larger than run (10 bytes): Java keeps the array.
    entry, _ = serialize_dv(DeletionVector([0, 1, 2, 10, 11]), bitmap64=False)
    assert entry == ref_entry32([0, 1, 2, 10, 11])
    assert entry[8:12] == struct.pack("<I", 12346)


def test_container_kinds_match_spec() -> None:
    # bitset (every other value: 10000 runs), array, run and a second key, in one bitmap
    values = list(range(0, 20_000, 2)) + [70_000, 70_005] + list(range(140_000, 150_000))
    entry, _ = serialize_dv(DeletionVector(values), bitmap64=False)
    assert entry == ref_entry32(values)
    assert read_dv(b"\x01" + entry, 1, None, PATH).positions().tolist() == values
    # >= 4 containers with a run container: the offset header is present too
    values = [0, 1, 2, 3, 2**16 + 5, 2**17 + 9, 2**18] + list(range(2**20, 2**20 + 50))
    entry, _ = serialize_dv(DeletionVector(values), bitmap64=False)
    assert entry == ref_entry32(values)
    assert read_dv(b"\x01" + entry, 1, None, PATH).positions().tolist() == values


# ------------------------------------------------------------------------------------------ the vector


def test_vector_api() -> None:
    dv = DeletionVector()
    dv.delete(5)
    dv.delete_many(np.array([9, 1, 5], dtype=np.int32))
    dv.delete_many([3])
    dv.delete_many(range(20, 23))
    assert dv.positions().tolist() == [1, 3, 5, 9, 20, 21, 22]
    assert dv.positions().dtype == np.int64
    assert dv.cardinality == 7 and not dv.is_empty()
    assert dv.is_deleted(9) and not dv.is_deleted(2) and not dv.is_deleted(-1) and not dv.is_deleted(2**40)
    mask = dv.keep_mask(10)
    assert mask.dtype == np.bool_ and mask.tolist() == [i not in {1, 3, 5, 9} for i in range(10)]
    assert dv.keep_mask(0).shape == (0,)
    other = DeletionVector([0, 1])
    dv.merge(other)
    assert dv.positions().tolist()[:2] == [0, 1]
    assert DeletionVector([1, 2]) == DeletionVector(np.array([2, 1]))
    assert DeletionVector([1]) != DeletionVector([1], bitmap64=True)  # different variants, as in Java
    big = DeletionVector([2**33], bitmap64=True)
    big.merge(DeletionVector([4]))
    assert big.positions().tolist() == [4, 2**33]
    with pytest.raises(ValueError, match="out of range"):
        DeletionVector().delete(MAX_POSITION_32 + 1)
    with pytest.raises(ValueError, match="out of range"):
        DeletionVector().delete_many(np.array([-1]))
    with pytest.raises(ValueError, match="out of range"):
        DeletionVector().merge(big)
    with pytest.raises(ValueError, match="bitmap64"):
        write_dv_index_file({"x": big}, bitmap64=False)
    assert write_dv_index_file({}, bitmap64=False) == (b"\x01", [])


def test_keep_mask_matches_naive_large() -> None:
    rng = np.random.default_rng(7)
    pos = rng.choice(1_000_000, size=50_000, replace=False)
    dv = DeletionVector(pos)
    mask = dv.keep_mask(900_000)
    expected = np.ones(900_000, dtype=bool)
    expected[pos[pos < 900_000]] = False
    assert np.array_equal(mask, expected)


def test_reads_sparse_pyroaring_64bit_layout() -> None:
    bm = BitMap64([3, 5 * 2**32 + 1])
    bm.run_optimize()
    sparse = bm.serialize()
    assert struct.unpack_from("<q", sparse)[0] == 2  # only non-empty keys
    entry = _entry(struct.pack("<i", MAGIC_64) + sparse)
    dv = read_dv(b"\x01" + entry, 1, len(entry), PATH)
    assert dv.is_64bit and dv.positions().tolist() == [3, 5 * 2**32 + 1]
    # Written back, it uses Java's dense layout (keys 0..5).
    out, length = serialize_dv(dv, bitmap64=True)
    assert struct.unpack_from("<q", out, 8)[0] == 6 and out == ref_entry64([3, 5 * 2**32 + 1])


# ------------------------------------------------------------------------------------ property tests

_runs_st = st.tuples(st.integers(0, 300_000), st.integers(1, 9_000)).map(lambda t: list(range(t[0], t[0] + t[1])))
# strided ranges give containers with > 4096 values and > 2047 runs: they stay bitset containers
_strided_st = st.tuples(st.integers(0, 300_000), st.integers(1, 6_000), st.integers(2, 3)).map(
    lambda t: list(range(t[0], t[0] + t[1] * t[2], t[2]))
)
_points32 = st.lists(st.integers(0, MAX_POSITION_32), max_size=50)
_dense_points = st.lists(st.integers(0, 140_000), max_size=300)
positions32 = st.tuples(
    _points32, _dense_points, st.lists(st.one_of(_runs_st, _strided_st), max_size=4)
).map(lambda t: sorted(set(t[0] + t[1] + [v for r in t[2] for v in r])))
_key = st.integers(0, 5)
positions64 = st.tuples(
    st.lists(st.tuples(_key, st.integers(0, 2**32 - 1)), max_size=40),
    st.lists(st.tuples(_key, st.one_of(_runs_st, _strided_st)), max_size=3),
).map(lambda t: sorted({k << 32 | v for k, v in t[0]} | {k << 32 | v for k, r in t[1] for v in r}))

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(positions32, positions32)
def test_property_32bit_matches_spec_and_round_trips(a: list[int], b: list[int]) -> None:
    dvs = {"f-a": DeletionVector(np.array(a, dtype=np.int64)), "f-b": DeletionVector(b)}
    data, ranges = write_dv_index_file(dvs, bitmap64=False)
    assert data == b"\x01" + ref_entry32(a) + ref_entry32(b)
    assert ranges[0] == DvRange("f-a", 1, len(ref_entry32(a)) - 8, len(a))
    assert ranges[1].offset == 1 + len(ref_entry32(a))
    back = read_dv_index_file(data, ranges, PATH)
    assert back["f-a"].positions().tolist() == a and back["f-b"].positions().tolist() == b
    assert back == dvs


@_settings
@given(positions64)
def test_property_64bit_matches_java_dense_and_round_trips(a: list[int]) -> None:
    dv = DeletionVector(a, bitmap64=True)
    data, ranges = write_dv_index_file({"f": dv}, bitmap64=True)
    assert data == b"\x01" + ref_entry64(a)
    assert ranges == [DvRange("f", 1, len(data) - 1, len(a))]
    back = read_dv(data, 1, ranges[0].length, PATH)
    assert back.is_64bit and back.positions().tolist() == a
    assert np.array_equal(back.keep_mask(6 * 2**16), dv.keep_mask(6 * 2**16))
