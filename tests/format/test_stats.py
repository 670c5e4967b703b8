"""Data-file statistics (format.md §5.6–5.7) against pypaimon's manifests and Java's collector rules.

pypaimon 2.1.0 records value stats only with ``metadata.stats-mode=full`` (and then without truncation); its
manifests are decoded here with fastavro directly and compared with what we compute from the same data file.
Known, deliberate divergences (we follow Java):
  * BINARY/VARBINARY: pypaimon records min/max; Java's Parquet/ORC extractors and truncate collector record none,
    so we record only the null count;
  * DOUBLE/FLOAT with NaN: pypaimon ignores NaN (``pc.min/max``); Java orders by ``Double.compareTo`` (NaN is the
    largest value), so our max is NaN when a NaN is present — otherwise a Java filter such as ``x > 2`` would
    wrongly skip the file;
  * key stats: pypaimon records full values, Java 1.0+ truncate(128) (0.9: the table mode, default truncate(16)).
"""
from __future__ import annotations

import datetime as dt
import math
import os
import struct
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from paimon_ops.errors import InvalidOptionError
from paimon_ops.format import datafile as df
from paimon_ops.format import stats as st
from paimon_ops.format.binary_row import serialize_row
from paimon_ops.format.manifest import EMPTY_STATS, SimpleStats
from paimon_ops.format.types import BIGINT, BYTES, INT, STRING, DataType
from tests import pypaimon_util as pp
from tests.format.test_datafile import (
    FORMATS,
    _schema_of,
    build_pypaimon_warehouse,
    data_file_paths,
    manifest_files,
)


def _simple(rec: dict) -> SimpleStats:
    nc = rec["_NULL_COUNTS"]
    return SimpleStats(rec["_MIN_VALUES"], rec["_MAX_VALUES"], None if nc is None else tuple(nc))


@pytest.fixture(scope="module")
def full_wh(tmp_path_factory) -> str:
    return build_pypaimon_warehouse(str(tmp_path_factory.mktemp("full_wh")), {"metadata.stats-mode": "full"})


@pytest.fixture(scope="module")
def default_wh(tmp_path_factory) -> str:
    return build_pypaimon_warehouse(str(tmp_path_factory.mktemp("default_wh")))


DIVERGENT = {"by"}  # binary: see module docstring


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["pk", "ap"])
def test_value_stats_match_pypaimon_manifest(full_wh, fmt, kind):
    name = f"flat_{fmt}_{kind}"
    pk = kind == "pk"
    schema = _schema_of(full_wh, name)
    meta = manifest_files(full_wh, name)[0]
    path = data_file_paths(full_wh, name)[0]
    assert os.path.basename(path) == meta["_FILE_NAME"]
    table = df.read_data_file(path, df.format_of(path), schema, schema, pk, path)
    types = [f.type for f in schema.fields]
    assert meta["_VALUE_STATS_COLS"] is None  # every column has stats in full mode

    ours, cols = st.compute_stats(table, schema.field_names, types, schema.options, dense=True,
                                  key_names=schema.trimmed_primary_keys if pk else ())
    assert cols is None
    theirs = st.decode_stats(_simple(meta["_VALUE_STATS"]), types, path)
    mine = st.decode_stats(ours, types, "ours")
    for i, col in enumerate(schema.field_names):
        t_min, t_max, t_nc = theirs[0][i], theirs[1][i], theirs[2][i]
        o_min, o_max, o_nc = mine[0][i], mine[1][i], mine[2][i]
        assert o_nc == t_nc == table.column(col).null_count, col
        if col in DIVERGENT:
            assert (o_min, o_max) == (None, None) and t_min is not None
        else:
            assert (o_min, o_max) == (t_min, t_max), col
    # all-mode (0.9 layout) holds the same values, one per column
    all_mode, cols = st.compute_stats(table, schema.field_names, types, schema.options, dense=False)
    assert cols is None and st.decode_stats(all_mode, types, "x") == mine


@pytest.mark.parametrize("fmt", FORMATS)
def test_key_stats_and_min_max_key_match_pypaimon(default_wh, fmt):
    name = f"flat_{fmt}_pk"
    schema = _schema_of(default_wh, name)
    meta = manifest_files(default_wh, name)[0]
    path = data_file_paths(default_wh, name)[0]
    table = df.read_data_file(path, fmt, schema, schema, True, path)
    keys = schema.trimmed_primary_keys
    ktypes = [schema.field(k).type for k in keys]
    mn, mx = st.min_max_key(table, keys, ktypes)
    assert (mn, mx) == (meta["_MIN_KEY"], meta["_MAX_KEY"])  # byte-exact BinaryRows
    ks = st.key_stats(table, keys, ktypes, schema.options)
    assert ks == _simple(meta["_KEY_STATS"])  # byte-exact for an INT key
    assert st.key_stats(table, keys, ktypes, schema.options, legacy=True) == ks
    # pypaimon wrote no value stats in the default mode: `_VALUE_STATS_COLS = []`, empty rows
    assert meta["_VALUE_STATS_COLS"] == []
    assert st.decode_stats(_simple(meta["_VALUE_STATS"]), [], path) == ([], [], [])


def test_string_composite_key_with_partition_matches_pypaimon(tmp_path):
    """Trimmed key = PK minus partition keys, in PK order; min/max key bytes equal pypaimon's."""
    wh = str(tmp_path / "wh")
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("s", pa.string(), nullable=False),
                        pa.field("n", pa.int64(), nullable=False), pa.field("v", pa.float64())])
    t = pp.create_table(wh, "db.ck", schema, partition_keys=["p"], primary_keys=["p", "n", "s"],
                        options={"bucket": "1"})
    long_key = "z" * 140  # longer than truncate(128)
    pp.write(t, {"p": ["a", "a", "a", "a"], "s": ["zz", "héllo", long_key, "a"], "n": [5, 5, 1, 9],
                 "v": [1.0, None, 2.0, 3.0]})
    ts = _schema_of(wh, "ck")
    assert ts.trimmed_primary_keys == ["n", "s"]
    meta = manifest_files(wh, "ck")[0]
    path = os.path.join(wh, "db.db", "ck", "p=a", "bucket-0", meta["_FILE_NAME"])
    table = df.read_data_file(path, "parquet", ts, ts, True, path)
    assert table.column_names[:2] == ["_KEY_n", "_KEY_s"]
    ktypes = [ts.field(k).type for k in ts.trimmed_primary_keys]
    assert st.min_max_key(table, ts.trimmed_primary_keys, ktypes) == (meta["_MIN_KEY"], meta["_MAX_KEY"])
    ours = st.decode_stats(st.key_stats(table, ts.trimmed_primary_keys, ktypes, ts.options), ktypes, "o")
    theirs = st.decode_stats(_simple(meta["_KEY_STATS"]), ktypes, path)
    assert ours[0][0] == theirs[0][0] == 1 and ours[1][0] == theirs[1][0] == 9
    assert ours[0][1] == theirs[0][1] == "a"
    # max string key: pypaimon keeps it whole, Java 1.0+ truncates to 128 code points and bumps the last one
    assert theirs[1][1] == long_key and ours[1][1] == "z" * 127 + "{"
    assert ours[2] == theirs[2] == [0, 0]
    # 0.9 rule: the table mode (truncate(16)) applies to _KEY_ columns
    legacy = st.decode_stats(st.key_stats(table, ts.trimmed_primary_keys, ktypes, ts.options, legacy=True), ktypes, "o")
    assert legacy[1][1] == "z" * 15 + "{"


def test_min_max_key_against_java_vectors():
    t = pa.table({"_KEY_k": pa.array([1, 7], pa.int32()), "k": pa.array([1, 7], pa.int32())})
    mn, mx = st.min_max_key(t, ["k"], [INT(False)])
    assert mn.hex() == "00000001" "0000000000000000" "0100000000000000"  # format.md §5.3 INT 1
    t = pa.table({"k": pa.array(["abc", "12345678"])})
    mn, mx = st.min_max_key(t, ["k"], [STRING(False)])
    assert mn.hex() == "00000001" "0000000000000000" "6162630000000083"
    assert mx.hex() == "00000001" "0000000000000000" "0800000010000000" "3132333435363738"


# ---------------------------------------------------------------- Java collector rules

def _one(values, t: DataType, options: dict | None = None, arrow_type=None):
    arr = pa.array(values, type=arrow_type) if arrow_type is not None else pa.array(values)
    table = pa.table({"c": arr})
    s, cols = st.compute_stats(table, ["c"], [t], options or {}, dense=True)
    mins, maxs, nulls = st.decode_stats(s, [t] if cols is None or cols else [], "x")
    if cols == ():
        return "none"
    return mins[0], maxs[0], nulls[0]


def test_string_truncation_by_code_points():
    long = "abcdefghijklmnopqrstuvwxyz"
    assert _one([long, "b"], STRING()) == ("abcdefghijklmnop", "b", 0)
    assert _one([long, "a", None], STRING()) == ("a", "abcdefghijklmnoq", 1)
    # code points, not bytes or UTF-16 units: 20 × 'é' (2 bytes each) and emoji (surrogate pairs in Java)
    assert _one(["é" * 20], STRING()) == ("é" * 16, "é" * 15 + "ê", 0)
    assert _one(["😀" * 17], STRING()) == ("😀" * 16, "😀" * 15 + "😁", 0)
    # exactly 16 code points: not incremented
    assert _one(["x" * 16], STRING()) == ("x" * 16, "x" * 16, 0)


def test_max_with_last_code_point_u10ffff():
    top = chr(0x10FFFF)
    s = "a" * 15 + top + "tail"
    assert _one([s], STRING()) == ("a" * 15 + top, "a" * 14 + "b", 0)
    # nothing incrementable: unknown min/max, the null count stays and is not the row count
    assert _one([top * 20, None], STRING()) == (None, None, 1)
    assert st.truncate_max(top * 20, 16) is None
    assert st.truncate_max("\ud7ff" + "x" * 20, 1) == "\ue000"  # U+D7FF + 1 is a surrogate: next scalar instead


def test_all_null_and_counts_and_none_modes():
    assert _one([None, None, None], INT(), arrow_type=pa.int32()) == (None, None, 3)
    assert _one([None, None], STRING(), arrow_type=pa.string()) == (None, None, 2)
    assert _one([1, None], INT(), {"metadata.stats-mode": "counts"}, pa.int32()) == (None, None, 1)
    assert _one([1, None], INT(), {"metadata.stats-mode": "none"}, pa.int32()) == "none"
    assert _one(["a" * 20], STRING(), {"metadata.stats-mode": "full"}) == ("a" * 20, "a" * 20, 0)
    assert _one(["a" * 20], STRING(), {"metadata.stats-mode": "TRUNCATE(4)"}) == ("aaaa", "aaab", 0)
    assert _one(["a" * 20], STRING(), {"fields.c.stats-mode": "truncate(2)"}) == ("aa", "ab", 0)
    for bad in ("truncate(0)", "partial", "truncate(x)"):
        with pytest.raises(InvalidOptionError):
            _one([1], INT(), {"metadata.stats-mode": bad}, pa.int32())


def test_nan_and_signed_zero_follow_java_compare_to():
    d = DataType("DOUBLE")
    mn, mx, nc = _one([1.0, float("nan"), -2.0, None], d)
    assert mn == -2.0 and math.isnan(mx) and nc == 1
    mn, mx, nc = _one([float("nan"), float("nan")], d)
    assert math.isnan(mn) and math.isnan(mx) and nc == 0
    mn, mx, _ = _one([0.0, -0.0], d)
    assert (mn, math.copysign(1, mn), mx, math.copysign(1, mx)) == (0.0, -1.0, 0.0, 1.0)
    mn, mx, _ = _one([-0.0, -1.0], d)
    assert mn == -1.0 and math.copysign(1, mx) == -1.0
    f = DataType("FLOAT")
    mn, mx, _ = _one([0.1, 2.5], f, arrow_type=pa.float32())
    assert mn == struct.unpack("<f", struct.pack("<f", 0.1))[0] and mx == 2.5


def test_types_without_min_max_keep_null_counts():
    assert _one([b"\x00", None], BYTES()) == (None, None, 1)
    assert _one([[1], None, []], DataType("ARRAY", element=INT()), arrow_type=pa.list_(pa.int32())) == (None, None, 1)
    ts9 = DataType("TIMESTAMP", precision=9)
    assert _one([1, None], ts9, arrow_type=pa.timestamp("ns")) == (None, None, 1)


def test_temporal_and_decimal_stats():
    ts6 = DataType("TIMESTAMP", precision=6)
    vals = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 1, 1, 0, 0, 0, 1), None]
    assert _one(vals, ts6, arrow_type=pa.timestamp("us")) == (vals[0], vals[1], 1)
    ltz = DataType("TIMESTAMP_LTZ", precision=3)
    v = [dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)]
    mn, mx, _ = _one(v, ltz, arrow_type=pa.timestamp("ms", tz="UTC"))
    assert mn == mx and mn.replace(tzinfo=None) == dt.datetime(2024, 1, 1, 12)
    dec = DataType("DECIMAL", precision=38, scale=4)
    assert _one([Decimal("-128.0000"), Decimal("5.5000")], dec, arrow_type=pa.decimal128(38, 4)) == (
        Decimal("-128.0000"), Decimal("5.5000"), 0)
    assert _one([dt.date(1960, 1, 1), dt.date(2000, 1, 1)], DataType("DATE")) == (
        dt.date(1960, 1, 1), dt.date(2000, 1, 1), 0)
    assert _one([True, None], DataType("BOOLEAN")) == (True, True, 1)


def test_dense_and_all_mode_layouts():
    table = pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", None], "c": pa.array([None, 5], pa.int64())})
    names, types = ["a", "b", "c"], [INT(), STRING(), BIGINT()]
    opts = {"fields.b.stats-mode": "none"}
    dense, cols = st.compute_stats(table, names, types, opts, dense=True)
    assert cols == ("a", "c")
    assert dense.min_values[:4] == (2).to_bytes(4, "big") and dense.null_counts == (0, 1)
    assert st.decode_stats(dense, [INT(), BIGINT()], "x") == ([1, 5], [2, 5], [0, 1])
    allm, cols = st.compute_stats(table, names, types, opts, dense=False)
    assert cols is None and allm.null_counts == (0, None, 1)
    assert st.decode_stats(allm, types, "x") == ([1, None, 5], [2, None, 5], [0, None, 1])
    # every column none: dense keeps an empty list (no value stats at all)
    none, cols = st.compute_stats(table, names, types, {"metadata.stats-mode": "none"}, dense=True)
    assert cols == () and none == SimpleStats(serialize_row([], []), serialize_row([], []), ())
    # stats rows use nullable types (a NOT NULL column still serialises as nullable)
    s1, _ = st.compute_stats(table, ["a"], [INT(False)], {}, dense=True)
    s2, _ = st.compute_stats(table, ["a"], [INT()], {}, dense=True)
    assert s1 == s2


def test_keep_first_n_columns_and_primary_key_value_columns():
    table = pa.table({"k": ["k" * 40], "a": ["a" * 40], "b": ["b"], "c": ["c"]})
    names = ["k", "a", "b", "c"]
    types = [STRING(False), STRING(), STRING(), STRING()]
    opts = {"metadata.stats-keep-first-n-columns": "2", "fields.c.stats-mode": "full"}
    s, cols = st.compute_stats(table, names, types, opts, dense=True, key_names=["k"])
    # k is a primary key: truncate(128) and not counted; a, b are the first two; c has its own mode
    assert cols is None
    mins, maxs, _ = st.decode_stats(s, types, "x")
    assert maxs == ["k" * 40, "a" * 15 + "b", "b", "c"]
    opts = {"metadata.stats-keep-first-n-columns": "1"}
    s, cols = st.compute_stats(table, names, types, opts, dense=True, key_names=["k"])
    assert cols == ("k", "a")
    # without key names (0.9 rules) the key column counts and uses the table mode
    s, cols = st.compute_stats(table, names, types, opts, dense=True)
    assert cols == ("k",)
    assert st.decode_stats(s, [STRING()], "x")[1] == ["k" * 15 + "l"]
    assert [str(m) for m in st.column_stats_modes(["_KEY_k", "_SEQUENCE_NUMBER", "x"], {})] == [
        "truncate(128)", "truncate(128)", "truncate(16)"]


def test_decode_empty_stats_and_errors():
    assert st.decode_stats(EMPTY_STATS, [INT(), STRING()], "x") == ([None, None], [None, None], [None, None])
    assert st.decode_stats(SimpleStats(EMPTY_STATS.min_values, EMPTY_STATS.max_values, None), [INT()], "x") == (
        [None], [None], [None])
    from paimon_ops.errors import CorruptMetadataError
    good, _ = st.compute_stats(pa.table({"a": pa.array([1], pa.int32())}), ["a"], [INT()], {}, dense=True)
    with pytest.raises(CorruptMetadataError):
        st.decode_stats(SimpleStats(good.min_values, good.max_values, (0, 0)), [INT()], "x")
    with pytest.raises(CorruptMetadataError):
        st.decode_stats(SimpleStats(b"\x00", b"\x00", (0,)), [INT()], "x")


def _utf8(s: str) -> bytes:
    return s.encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st_.lists(st_.one_of(st_.none(), st_.text(max_size=40)), min_size=1, max_size=30),
       st_.integers(min_value=1, max_value=20))
def test_truncated_bounds_are_sound(values, n):
    """For any strings: min <= every value <= max in UTF-8 byte order (Java's BinaryString order), and unknown
    stats never claim that every row is null."""
    mode = {"metadata.stats-mode": f"truncate({n})"}
    mn, mx, nulls = _one(values, STRING(), mode, pa.string())
    present = [v for v in values if v is not None]
    assert nulls == len(values) - len(present)
    if mn is None or mx is None:
        assert mn is None and mx is None
        if present:
            assert nulls != len(values)
        return
    for v in present:
        assert _utf8(mn) <= _utf8(v) <= _utf8(mx)
    assert len(mn) <= n and len(mx) <= n
