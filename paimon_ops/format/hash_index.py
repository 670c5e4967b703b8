"""Dynamic-bucket hash index files (``_INDEX_TYPE = "HASH"``, format.md §6.3): codec only.

A file is a plain sequence of int32 big-endian key hashes: no header, no footer, order irrelevant.
The index manifest's ``_ROW_COUNT`` is the number of ints, ``_FILE_SIZE`` is 4 x that.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Union

import numpy as np

from paimon_ops.errors import CorruptMetadataError, FormatError

__all__ = ["read_hash_index", "write_hash_index"]

_BE_INT32 = np.dtype(">i4")
Buffer = Union[bytes, bytearray, memoryview]


def read_hash_index(data: Buffer, path: str) -> np.ndarray:
    """All hashes of one HASH index file as a native-order, writable int32 array."""
    size = memoryview(data).nbytes
    if size % 4:
        raise CorruptMetadataError(
            path, f"hash index is {size} bytes, not a multiple of 4 (truncated after {size // 4} int32 hashes)"
        )
    # astype copies into native byte order, so callers get an ordinary writable array.
    return np.frombuffer(data, dtype=_BE_INT32).astype(np.int32)


def write_hash_index(hashes: np.ndarray | Iterable[int]) -> bytes:
    """Encode hashes (signed int32 values, as Java's ``BinaryRow.hashCode()``) as a HASH index file.

    A ``uint32`` numpy array is taken as the same 32 bits (reinterpreted, not range-checked); any other
    input must hold values in the int32 range.
    """
    if isinstance(hashes, np.ndarray):
        arr = hashes.ravel()
        if arr.dtype.kind not in "iu":
            raise TypeError(f"hashes must be integers, got dtype {arr.dtype}")
        if arr.dtype == np.uint32:
            return arr.view(np.int32).astype(_BE_INT32).tobytes()
    else:
        try:
            arr = np.fromiter(hashes, dtype=np.int64)
        except OverflowError as e:
            raise FormatError(f"hash out of int32 range: {e}") from e
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -(2**31) or hi > 2**31 - 1:
            bad = lo if lo < -(2**31) else hi
            raise FormatError(f"hash {bad} out of int32 range (hashes are Java's signed BinaryRow.hashCode())")
    return arr.astype(_BE_INT32).tobytes()
