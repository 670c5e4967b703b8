"""Partition directory names against the Java-generated examples of format.md §1.3, Java number/date
rendering, escaping and user partition-spec parsing."""
from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_ops.errors import InvalidArgumentError, UnsupportedError
from paimon_ops.format.binary_row import decode_row, encode_row
from paimon_ops.format.partition import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    java_double_to_string,
    java_float_to_string,
    parse_partition_dir,
    parse_partition_spec,
    partition_dir,
    partition_path,
    partition_spec,
    partition_value_string,
    unescape_path_name,
)
from paimon_ops.format.types import parse_type


def T(s: Any):  # noqa: N802, ANN201
    return parse_type(s)


# Inputs of the Java run quoted in §1.3 (InternalRowPartitionComputer + PartitionPathUtils, master).
NAMES = "s i d ts3 ts6 dec b dbl flt l nul emp ts3b sp".split()
TYPES = [T(x) for x in [
    "STRING", "INT", "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "DECIMAL(10, 2)", "BOOLEAN", "DOUBLE", "FLOAT",
    "BIGINT", "STRING", "STRING", "TIMESTAMP(3)", "STRING",
]]
VALUES = [
    "x", 7, date(1970, 1, 1) + timedelta(days=19723),
    datetime(1970, 1, 1) + timedelta(milliseconds=1704103200000),
    datetime(1970, 1, 1) + timedelta(milliseconds=1704103230123, microseconds=456),
    Decimal("12.30"), True, 1e10, 0.1, 9, None, "",
    datetime(1970, 1, 1) + timedelta(milliseconds=1704103205000), "a/b=c d%é#",
]
JAVA_LEGACY = (
    "s=x/i=7/d=19723/ts3=2024-01-01T10%3A00/ts6=2024-01-01T10%3A00%3A30.123456/dec=12.30/b=true/"
    "dbl=1.0E10/flt=0.1/l=9/nul=__DEFAULT_PARTITION__/emp=__DEFAULT_PARTITION__/"
    "ts3b=2024-01-01T10%3A00%3A05/sp=a%2Fb%3Dc d%25é%23/"
)
JAVA_NON_LEGACY = (
    "s=x/i=7/d=2024-01-01/ts3=2024-01-01 10%3A00%3A00.000/ts6=2024-01-01 10%3A00%3A30.123456/"
    "dec=12.30/b=true/dbl=1.0E10/flt=0.1/l=9/nul=__DEFAULT_PARTITION__/emp=__DEFAULT_PARTITION__/"
    "ts3b=2024-01-01 10%3A00%3A05.000/sp=a%2Fb%3Dc d%25é%23/"
)


def test_java_example_legacy() -> None:
    assert partition_path(VALUES, NAMES, TYPES) == JAVA_LEGACY
    assert partition_path(VALUES, NAMES, TYPES, legacy=True) == JAVA_LEGACY
    assert partition_dir(VALUES, NAMES, TYPES) == JAVA_LEGACY[:-1]


def test_java_example_non_legacy() -> None:
    assert partition_path(VALUES, NAMES, TYPES, legacy=False) == JAVA_NON_LEGACY
    assert partition_dir(VALUES, NAMES, TYPES, legacy=False) == JAVA_NON_LEGACY[:-1]


def test_java_example_from_decoded_partition_row() -> None:
    """What a reader does: decode the manifest's partition BinaryRow, then render it."""
    row = encode_row(VALUES, TYPES)
    assert partition_path(decode_row(row, TYPES), NAMES, TYPES) == JAVA_LEGACY
    # ints for DATE (day number) render the same
    vals = list(VALUES)
    vals[2] = 19723
    assert partition_path(vals, NAMES, TYPES) == JAVA_LEGACY


def test_unpartitioned_and_spec() -> None:
    assert partition_path([], [], []) == ""
    assert partition_dir([], [], []) == ""
    spec = partition_spec(VALUES, NAMES, TYPES)
    assert spec["sp"] == "a/b=c d%é#" and spec["nul"] == DEFAULT_PARTITION_NAME
    assert partition_path(["a", None], ["k", "v"], [T("STRING"), T("INT")], default_name="NULLS") == "k=a/v=NULLS/"
    assert partition_path(["a", 1], ["k", "v"], [T("STRING"), T("INT")], only_value=True) == "a/1/"
    with pytest.raises(InvalidArgumentError):
        partition_path([".."], ["k"], [T("STRING")], only_value=True)
    assert partition_path([".."], ["k"], [T("STRING")]) == "k=../"


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u2003", "\u001f"])
def test_blank_values_use_default_name(blank: str) -> None:
    assert partition_path([blank], ["k"], [T("STRING")]) == "k=__DEFAULT_PARTITION__/"


def test_non_breaking_space_is_not_blank() -> None:
    # Java's Character.isWhitespace is false for U+00A0; non-ASCII is not escaped
    assert partition_path(["\u00a0"], ["k"], [T("STRING")]) == "k=\u00a0/"


def test_escaping() -> None:
    special = "\x00\x01\x1f\"#%'*/:=?\\\x7f{}[]^"
    assert escape_path_name(special) == "%00%01%1F%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%7D%5B%5D%5E"
    assert escape_path_name("a b-c_d.e,f;g@h!é漢") == "a b-c_d.e,f;g@h!é漢"
    assert unescape_path_name("%2f%3A%zz%2") == "/:%zz%2"
    assert partition_path(["v"], ["we=ird"], [T("STRING")]) == "we%3Dird=v/"


@settings(max_examples=300)
@given(st.text())
def test_unescape_inverts_escape(s: str) -> None:
    assert unescape_path_name(escape_path_name(s)) == s


@pytest.mark.parametrize(("x", "java"), [
    (1e10, "1.0E10"), (0.1, "0.1"), (100.0, "100.0"), (1234567.0, "1234567.0"), (9999999.0, "9999999.0"),
    (1e7, "1.0E7"), (0.001, "0.001"), (0.0009, "9.0E-4"), (1e-4, "1.0E-4"), (123456789.0, "1.23456789E8"),
    (5e-324, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"), (1 / 3, "0.3333333333333333"),
    (0.1 + 0.2, "0.30000000000000004"), (2e23, "2.0E23"), (1e23, "1.0E23"), (-2.5, "-2.5"), (0.0, "0.0"),
    (-0.0, "-0.0"), (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
    (12345.678, "12345.678"), (1.0, "1.0"), (-1e-10, "-1.0E-10"),
])
def test_java_double_to_string(x: float, java: str) -> None:
    assert java_double_to_string(x) == java


@pytest.mark.parametrize(("x", "java"), [
    (0.1, "0.1"), (1e10, "1.0E10"), (3.4028235e38, "3.4028235E38"), (1.4e-45, "1.4E-45"), (1 / 3, "0.33333334"),
    (16777216.0, "1.6777216E7"), (1.1, "1.1"), (100.0, "100.0"), (1e-5, "1.0E-5"), (-0.0, "-0.0"),
    (2.8e-45, "2.8E-45"), (3.0, "3.0"), (1234567.0, "1234567.0"),
])
def test_java_float_to_string(x: float, java: str) -> None:
    assert java_float_to_string(x) == java


@settings(max_examples=500)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_string_round_trips_and_is_shortest(x: float) -> None:
    s = java_double_to_string(x)
    assert float(s) == x
    # never longer than Python's shortest repr (Java may only add the '.0' / two-digit minimum)
    digits = lambda t: len(t.lower().split("e")[0].replace("-", "").replace(".", "").strip("0"))  # noqa: E731
    assert digits(s) <= max(2, digits(repr(x)))


@settings(max_examples=300)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_string_round_trips(x: float) -> None:
    import struct

    s = java_float_to_string(x)
    assert struct.unpack("<f", struct.pack("<f", float(s)))[0] == x


@pytest.mark.parametrize(("value", "type_", "legacy", "expected"), [
    (datetime(2024, 1, 1, 10, 0), "TIMESTAMP(3)", True, "2024-01-01T10:00"),
    (datetime(2024, 1, 1, 10, 0, 5), "TIMESTAMP(3)", True, "2024-01-01T10:00:05"),
    (datetime(2024, 1, 1, 10, 0, 0, 1000), "TIMESTAMP(3)", True, "2024-01-01T10:00:00.001"),
    (datetime(2024, 1, 1, 10, 0, 30, 120000), "TIMESTAMP(6)", True, "2024-01-01T10:00:30.120"),
    (datetime(2024, 1, 1, 10, 0, 30, 123400), "TIMESTAMP(6)", True, "2024-01-01T10:00:30.123400"),
    (datetime(999, 3, 4, 0, 0), "TIMESTAMP(6)", True, "0999-03-04T00:00"),
    (datetime(2024, 1, 1, 10, 0), "TIMESTAMP(0)", False, "2024-01-01 10:00:00"),
    (datetime(2024, 1, 1, 10, 0, 0, 120000), "TIMESTAMP(6)", False, "2024-01-01 10:00:00.120000"),
    (datetime(2024, 1, 1, 10, 0, 0, 123456), "TIMESTAMP(3)", False, "2024-01-01 10:00:00.123456"),
    (datetime(2024, 1, 1, 11, 0, tzinfo=timezone(timedelta(hours=1))), "TIMESTAMP(3) WITH LOCAL TIME ZONE", True,
     "2024-01-01T10:00"),
    (date(2024, 2, 29), "DATE", True, "19782"),
    (date(2024, 2, 29), "DATE", False, "2024-02-29"),
    (time(10, 30, 5, 250000), "TIME(3)", True, "37805250"),
    (time(10, 30, 5, 250000), "TIME(3)", False, "10:30:05.25"),
    (time(10, 30, 5), "TIME(3)", False, "10:30:05.0"),
    (time(10, 30, 5, 250000), "TIME(0)", False, "10:30:05"),
    (Decimal("-0.5"), "DECIMAL(10, 3)", True, "-0.500"),
    (Decimal("0"), "DECIMAL(10, 2)", True, "0.00"),
    (Decimal("-0.00"), "DECIMAL(10, 2)", False, "0.00"),
    (Decimal("42"), "DECIMAL(5, 0)", True, "42"),
    (False, "BOOLEAN", True, "false"),
    (-12, "TINYINT", True, "-12"),
    (b"ab", "BYTES", False, "ab"),
])
def test_value_rendering(value: Any, type_: str, legacy: bool, expected: str) -> None:
    assert partition_value_string(value, T(type_), legacy) == expected


def test_binary_partition_refused_in_legacy_mode() -> None:
    with pytest.raises(UnsupportedError, match="byte"):
        partition_path([b"ab"], ["k"], [T("BYTES")])


def test_nanosecond_timestamp_rendering() -> None:
    pd = pytest.importorskip("pandas")
    ts = pd.Timestamp("2024-01-01 10:00:30.123456789")
    assert partition_value_string(ts, T("TIMESTAMP(9)"), True) == "2024-01-01T10:00:30.123456789"
    assert partition_value_string(ts, T("TIMESTAMP(9)"), False) == "2024-01-01 10:00:30.123456789"


# ---------------------------------------------------------------- parsing user specs

PTYPES = [T("DATE"), T("INT"), T("STRING"), T("DECIMAL(10, 2)"), T("TIMESTAMP(3)"), T("BOOLEAN"), T("TIME(0)"),
          T("DOUBLE")]
PNAMES = ["dt", "hr", "s", "dec", "ts", "flag", "t", "x"]


def test_parse_partition_spec() -> None:
    got = parse_partition_spec(
        "dt=2024-01-01,hr=10,s=a b,dec=12.3,ts=2024-01-01T10:00:05.5,flag=true,t=10:30,x=1.0E10", PNAMES, PTYPES)
    assert got == {"dt": date(2024, 1, 1), "hr": 10, "s": "a b", "dec": Decimal("12.30"),
                   "ts": datetime(2024, 1, 1, 10, 0, 5, 500000), "flag": True, "t": time(10, 30), "x": 1e10}
    assert list(got) == PNAMES  # partition-key order
    # the day number Java prints in legacy paths is accepted too, as is the default partition name
    assert parse_partition_spec("hr=__DEFAULT_PARTITION__,dt=19723", PNAMES, PTYPES) == {
        "dt": date(2024, 1, 1), "hr": None}
    assert parse_partition_spec({"ts": "2024-01-01 10:00"}, PNAMES, PTYPES) == {"ts": datetime(2024, 1, 1, 10)}
    assert parse_partition_spec("", PNAMES, PTYPES) == {}
    # parsed values render back to the same directory
    vals = parse_partition_spec("dt=2024-01-01,hr=7", PNAMES, PTYPES)
    assert partition_path(list(vals.values()), list(vals), PTYPES[:2]) == "dt=19723/hr=7/"


@pytest.mark.parametrize(("spec", "words"), [
    ("hr=ten", ["hr", "ten"]),
    ("hr=99999999999", ["hr", "99999999999"]),
    ("dt=2024-13-01", ["dt", "2024-13-01"]),
    ("dec=123456789.12", ["dec", "123456789.12"]),
    ("flag=maybe", ["flag", "maybe"]),
    ("ts=yesterday", ["ts", "yesterday"]),
    ("nope=1", ["nope", "1"]),
    ("hr", ["hr"]),
    ("hr=1,hr=2", ["hr", "2"]),
])
def test_parse_partition_spec_errors_name_key_and_value(spec: str, words: list[str]) -> None:
    with pytest.raises(InvalidArgumentError) as ei:
        parse_partition_spec(spec, PNAMES, PTYPES)
    for w in words:
        assert w in str(ei.value)


def test_parse_partition_spec_require_all() -> None:
    with pytest.raises(InvalidArgumentError, match="hr"):
        parse_partition_spec("dt=2024-01-01", ["dt", "hr"], [T("DATE"), T("INT")], require_all=True)


def test_parse_partition_spec_nanos_and_ltz() -> None:
    pd = pytest.importorskip("pandas")
    got = parse_partition_spec("a=2024-01-01 10:00:00.123456789,b=2024-01-01T10:00", ["a", "b"],
                               [T("TIMESTAMP(9)"), T("TIMESTAMP(3) WITH LOCAL TIME ZONE")])
    assert got["a"] == pd.Timestamp("2024-01-01 10:00:00.123456789")
    assert got["b"] == datetime(2024, 1, 1, 10, tzinfo=timezone.utc)


def test_parse_partition_dir() -> None:
    assert parse_partition_dir(JAVA_LEGACY) == {
        "s": "x", "i": "7", "d": "19723", "ts3": "2024-01-01T10:00", "ts6": "2024-01-01T10:00:30.123456",
        "dec": "12.30", "b": "true", "dbl": "1.0E10", "flt": "0.1", "l": "9", "nul": DEFAULT_PARTITION_NAME,
        "emp": DEFAULT_PARTITION_NAME, "ts3b": "2024-01-01T10:00:05", "sp": "a/b=c d%é#",
    }
    with pytest.raises(ValueError):
        parse_partition_dir("bucket-0")
