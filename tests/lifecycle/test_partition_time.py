"""Partition times without Java (the Java differential is test_partition_time_java.py): the cases that matter most
for partition expiry, pattern validation, and LocalDateTime arithmetic."""
from __future__ import annotations

import pytest

from paimon_ops.lifecycle.partition_time import (
    LocalDateTime,
    PartitionTimeError,
    PartitionTimeExtractor,
    PatternError,
    civil_from_days,
    days_from_civil,
)


@pytest.mark.parametrize("formatter,value,expected", [
    (None, "2024-01-01", "2024-01-01T00:00"),
    (None, "2024-01-01 10:30:00", "2024-01-01T10:30"),
    (None, "2024-1-1 7:05:09.5", "2024-01-01T07:05:09.500"),
    (None, "2024-13-01", "2025-01-01T00:00"),             # Paimon's default parser is lenient
    ("yyyyMMdd", "20240101", "2024-01-01T00:00"),         # adjacent value parsing
    ("yyyyMMddHH", "2024010110", "2024-01-01T10:00"),
    ("yyyy-MM-dd", "2024-02-31", "2024-02-29T00:00"),     # SMART: clamped to the month
    ("yyyy-MM-dd HH:mm:ss", "2024-01-01 24:00:00", "2024-01-02T00:00"),
    ("yy-MM-dd", "24-01-01", "2024-01-01T00:00"),
    ("yyyy-DDD", "2024-366", "2024-12-31T00:00"),
])
def test_parses_like_java(formatter, value, expected):
    assert str(PartitionTimeExtractor(None, formatter).extract(["dt"], [value])) == expected


@pytest.mark.parametrize("formatter,value", [
    (None, "20240101"), (None, "19723"), ("yyyyMMdd", "2024-01-01"), ("yyyy-MM-dd", "2024-13-01"),
    ("yyyy-MM-dd HH:mm:ss", "2024-01-01 25:00:00"), (None, "2024-01-01 10:00"), ("yyyy-DDD", "2023-366"),
])
def test_unparseable(formatter, value):
    with pytest.raises(PartitionTimeError):
        PartitionTimeExtractor(None, formatter).extract(["dt"], [value])


@pytest.mark.parametrize("formatter,words", [
    ("yyyy-MM-dd bb", "Unknown pattern letter: b"), ("MMM yyyy", "month text"), ("yyyy-MM-dd a", "'a'"),
    ("yyyy{", "reserved"), ("yyyy'", "incomplete string literal"), ("yyyy]", "without previous ["),
    ("ddd", "Too many pattern letters"),
])
def test_invalid_formatters(formatter, words):
    with pytest.raises(PatternError, match=words.replace("[", r"\[")):
        PartitionTimeExtractor(None, formatter)


def test_pattern_names_partition_keys():
    ex = PartitionTimeExtractor("$dt $hour:00:00", None)
    ex.check_pattern(["dt", "hour"])
    assert str(ex.extract(["dt", "hour"], ["2024-01-01", "7"])) == "2024-01-01T07:00"
    with pytest.raises(PatternError, match=r"\$day is not a partition key"):
        PartitionTimeExtractor("$day", None).check_pattern(["dt"])
    with pytest.raises(PatternError, match="names no partition key"):
        PartitionTimeExtractor("2024-01-01", None).check_pattern(["dt"])
    # the longest key wins (apache/paimon#9136)
    assert str(PartitionTimeExtractor("$dt1", None).extract(["dt", "dt1"], ["x", "2024-01-02"])) == "2024-01-02T00:00"


def test_local_date_time():
    for y in (-1, 0, 1, 1970, 2024, 9999, 20240101):
        for m, d in ((1, 1), (2, 28), (12, 31)):
            assert civil_from_days(days_from_civil(y, m, d)) == (y, m, d)
    t = LocalDateTime.of(2024, 1, 1, 23, 59, 59, 500_000_000)
    assert str(t) == "2024-01-01T23:59:59.500" and str(t.plus_nanos(500_000_000)) == "2024-01-02T00:00"
    assert LocalDateTime.of_local_millis(t.to_local_millis()) == t
    assert str(LocalDateTime.of(2024, 1, 1)) == "2024-01-01T00:00"
