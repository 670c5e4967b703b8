"""HASH index files: int32 big-endian hashes, no header or footer (format.md §6.3)."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paimon_ops.errors import CorruptMetadataError
from paimon_ops.format.hash_index import read_hash_index, write_hash_index

PATH = "/warehouse/db.db/t/index/index-hash-0"
INT32 = st.integers(-(2**31), 2**31 - 1)


def test_known_bytes() -> None:
    hashes = [0, 1, -1, 2**31 - 1, -(2**31), 0x12345678]
    expected = bytes.fromhex("00000000" "00000001" "ffffffff" "7fffffff" "80000000" "12345678")
    assert write_hash_index(hashes) == expected
    assert write_hash_index(np.array(hashes, dtype=np.int64)) == expected
    assert write_hash_index(np.array(hashes, dtype=np.int32)) == expected
    out = read_hash_index(expected, PATH)
    assert out.dtype == np.int32 and out.dtype.isnative and out.flags.writeable
    assert out.tolist() == hashes


def test_uint32_input_is_reinterpreted() -> None:
    assert write_hash_index(np.array([0xFFFFFFFF, 0x80000000], dtype=np.uint32)) == bytes.fromhex("ffffffff80000000")


def test_empty() -> None:
    assert write_hash_index([]) == b""
    assert read_hash_index(b"", PATH).shape == (0,)


def test_out_of_range_rejected() -> None:
    with pytest.raises(ValueError, match="int32"):
        write_hash_index([2**31])
    with pytest.raises(ValueError, match="int32"):
        write_hash_index(np.array([-(2**31) - 1], dtype=np.int64))
    with pytest.raises(ValueError, match="int32"):
        write_hash_index([2**70])
    with pytest.raises(TypeError):
        write_hash_index(np.array([1.5]))


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_length_not_multiple_of_4(size: int) -> None:
    with pytest.raises(CorruptMetadataError) as ei:
        read_hash_index(b"\x00" * size, PATH)
    assert ei.value.path == PATH and str(ei.value).startswith(PATH + ": ")
    assert f"{size} bytes" in str(ei.value)


@given(st.lists(INT32, max_size=500))
def test_property_matches_struct_and_round_trips(hashes: list[int]) -> None:
    data = write_hash_index(hashes)
    assert data == b"".join(struct.pack(">i", h) for h in hashes)
    assert read_hash_index(data, PATH).tolist() == hashes
    assert read_hash_index(bytearray(data), PATH).tolist() == hashes
