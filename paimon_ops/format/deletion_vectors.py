"""Deletion-vector index files (format.md §8): codec only, no policy.

File layout: one version byte ``0x01``, then one entry per data file::

    32-bit: int32 BE L=4+len(bm) | int32 BE magic 1581511376 | portable RoaringBitmap | int32 BE CRC32
    64-bit: int32 BE L=4+len(bm) | int32 LE magic 1681511377 | int64 LE count
            | count x (int32 LE key, portable 32-bit RoaringBitmap)              | int32 BE CRC32

The CRC covers magic + bitmap bytes. The index manifest points at each entry with (offset of the length
field, "length", cardinality); "length" is ``L`` for 32-bit but the whole entry ``4 + L + 4`` for 64-bit.
"""
from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np
from pyroaring import BitMap, BitMap64

from paimon_ops.errors import CorruptMetadataError, FormatError

__all__ = [
    "DV_INDEX_VERSION",
    "MAGIC_32",
    "MAGIC_64",
    "MAX_POSITION_32",
    "MAX_POSITION_64",
    "DeletionVector",
    "DvRange",
    "serialize_dv",
    "write_dv_index_file",
    "read_dv",
    "read_dv_index_file",
]

DV_INDEX_VERSION = 1
MAGIC_32 = 1581511376  # BitmapDeletionVector.MAGIC_NUMBER, written big-endian
MAGIC_64 = 1681511377  # Bitmap64DeletionVector.MAGIC_NUMBER, written little-endian
# Java's BitmapDeletionVector rejects positions above Integer.MAX_VALUE (RoaringBitmap32.MAX_VALUE).
MAX_POSITION_32 = 2**31 - 1
# OptimizedRoaringBitmap64.MAX_VALUE: key (high 32 bits) at most Integer.MAX_VALUE - 1.
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0xFFFFFFFF
_MAX_KEY_64 = 2**31 - 2

_MAGIC_32_BYTES = struct.pack(">i", MAGIC_32)
_MAGIC_64_BYTES = struct.pack("<i", MAGIC_64)
# Portable RoaringBitmap format constants (RoaringFormatSpec).
_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX_CARD = 4096
_BITSET_BYTES = 8192
# An empty 32-bit bitmap: no-run cookie + container count 0 (identical in Java and CRoaring).
_EMPTY_BITMAP32 = struct.pack("<II", _SERIAL_COOKIE_NO_RUN, 0)
_MAX_INT32 = 2**31 - 1

Positions = Union[np.ndarray, Iterable[int]]
Buffer = Union[bytes, bytearray, memoryview]


class DeletionVector:
    """The deleted row positions of one data file (0-based row ordinals).

    Wraps a pyroaring ``BitMap`` (32-bit variant, Java ``BitmapDeletionVector``) or ``BitMap64``
    (64-bit variant, Java ``Bitmap64DeletionVector``). Like Java, a vector only ever gains positions.
    """

    __slots__ = ("_bm", "is_64bit")

    def __init__(self, positions: Positions | None = None, *, bitmap64: bool = False) -> None:
        self.is_64bit: bool = bitmap64
        self._bm: BitMap | BitMap64 = BitMap64() if bitmap64 else BitMap()
        if positions is not None:
            self.delete_many(positions)

    @property
    def bitmap(self) -> BitMap | BitMap64:
        """The underlying pyroaring bitmap (live object; mutate only through this class)."""
        return self._bm

    @property
    def max_position(self) -> int:
        return MAX_POSITION_64 if self.is_64bit else MAX_POSITION_32

    @property
    def cardinality(self) -> int:
        """Number of deleted rows (the manifest's ``_CARDINALITY``)."""
        return len(self._bm)

    def is_empty(self) -> bool:
        return len(self._bm) == 0

    def delete(self, pos: int) -> None:
        pos = int(pos)
        if pos < 0 or pos > self.max_position:
            raise FormatError(self._range_message(pos))
        self._bm.add(pos)

    def delete_many(self, positions: Positions) -> None:
        arr = _as_positions(positions)
        if arr.size == 0:
            return
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi > self.max_position:
            raise FormatError(self._range_message(lo if lo < 0 else hi))
        # array.array goes through pyroaring's buffer fast path; a numpy array would be iterated per element.
        if self.is_64bit:
            self._bm.update(array("Q", arr.astype(np.uint64).tobytes()))
        else:
            self._bm.update(array("I", arr.astype(np.uint32).tobytes()))

    def is_deleted(self, pos: int) -> bool:
        pos = int(pos)
        # pyroaring raises OverflowError outside its key range; such a row simply is not deleted.
        if pos < 0 or pos > (MAX_POSITION_64 if self.is_64bit else 0xFFFFFFFF):
            return False
        return pos in self._bm

    def positions(self) -> np.ndarray:
        """Sorted deleted positions as an int64 numpy array."""
        dtype = np.uint64 if self.is_64bit else np.uint32
        return np.frombuffer(self._bm.to_array(), dtype=dtype).astype(np.int64)

    def keep_mask(self, num_rows: int) -> np.ndarray:
        """Boolean mask of length ``num_rows``: True where the row survives.

        Positions at or beyond ``num_rows`` are ignored (they cannot refer to a row of this file).
        """
        if num_rows < 0:
            raise FormatError(f"num_rows must be >= 0, got {num_rows}")
        mask = np.ones(num_rows, dtype=np.bool_)
        pos = self.positions()
        mask[pos[: np.searchsorted(pos, num_rows)]] = False
        return mask

    def merge(self, other: DeletionVector) -> None:
        """Add all positions of ``other``; keeps this vector's variant (positions are range-checked)."""
        if other.is_64bit == self.is_64bit:
            self._bm |= other._bm  # type: ignore[operator]  # same variant: both BitMap or both BitMap64
        else:
            self.delete_many(other.positions())

    def copy(self) -> DeletionVector:
        dv = DeletionVector(bitmap64=self.is_64bit)
        dv._bm = self._bm.copy()
        return dv

    def __eq__(self, other: object) -> bool:
        # Like Java: equal only with the same variant and the same positions.
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return self.is_64bit == other.is_64bit and self._bm == other._bm

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        kind = "64" if self.is_64bit else "32"
        return f"DeletionVector(bitmap{kind}, cardinality={self.cardinality})"

    def _range_message(self, pos: int) -> str:
        kind = "64-bit" if self.is_64bit else "32-bit"
        return f"row position {pos} out of range for a {kind} deletion vector (0..{self.max_position})"


@dataclass(frozen=True)
class DvRange:
    """One ``_DELETIONS_VECTORS_RANGES`` element of an index-manifest entry (§8.3).

    ``length`` is the manifest's ``f2``: ``L`` for 32-bit entries, ``4 + L + 4`` for 64-bit ones.
    ``cardinality`` is None when read from a 0.9 manifest (no ``_CARDINALITY`` field).
    """

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


# --------------------------------------------------------------------------------------------- writing


def serialize_dv(dv: DeletionVector, bitmap64: bool) -> tuple[bytes, int]:
    """One entry (length field .. CRC) in the requested variant, and its manifest ``f2`` length."""
    if bitmap64:
        payload = _MAGIC_64_BYTES + _bitmap64_dense_bytes(dv)
    else:
        payload = _MAGIC_32_BYTES + _bitmap32_bytes(dv)
    if len(payload) + 8 > _MAX_INT32:
        raise FormatError("deletion vector too large: Java cannot serialise an entry over 2 GiB")
    crc = zlib.crc32(payload) & 0xFFFFFFFF
    entry = struct.pack(">i", len(payload)) + payload + struct.pack(">I", crc)
    return entry, (len(entry) if bitmap64 else len(payload))


def write_dv_index_file(dvs: Mapping[str, DeletionVector], bitmap64: bool) -> tuple[bytes, list[DvRange]]:
    """A complete DV index file for ``dvs`` (data-file name -> vector), entries in mapping order.

    Returns the file bytes and the ranges to record in the index manifest.
    """
    parts: list[bytes] = [bytes([DV_INDEX_VERSION])]
    ranges: list[DvRange] = []
    offset = 1
    for data_file, dv in dvs.items():
        entry, length = serialize_dv(dv, bitmap64)
        ranges.append(DvRange(data_file, offset, length, dv.cardinality))
        parts.append(entry)
        offset += len(entry)
    if offset > _MAX_INT32:
        # f1 is an Avro int: entries beyond 2 GiB cannot be addressed.
        raise FormatError(f"deletion-vector index file would be {offset} bytes; offsets must fit in int32")
    return b"".join(parts), ranges


def _bitmap32_bytes(dv: DeletionVector) -> bytes:
    if dv.is_64bit:
        pos = dv.positions()
        if pos.size and int(pos[-1]) > MAX_POSITION_32:
            raise FormatError(
                f"row position {int(pos[-1])} does not fit a 32-bit deletion vector (max {MAX_POSITION_32});"
                " write with bitmap64=True (deletion-vectors.bitmap64)"
            )
        bm: BitMap | BitMap64 = BitMap(array("I", pos.astype(np.uint32).tobytes()))
    else:
        bm = dv.bitmap
    # Java runs runOptimize() in place before serialising; without it pyroaring keeps array/bitset
    # containers and the bytes differ from Java's (readers accept both).
    bm.run_optimize()
    return bm.serialize()


def _bitmap64_dense_bytes(dv: DeletionVector) -> bytes:
    """Java OptimizedRoaringBitmap64 layout: count, then *every* key 0..maxKey, empty ones included."""
    if not dv.is_64bit:
        # Java's Bitmap64DeletionVector.fromBitmapDeletionVector: the 32-bit bitmap becomes key 0.
        return struct.pack("<q", 1) + struct.pack("<i", 0) + _bitmap32_bytes(dv)
    bm = dv.bitmap
    bm.run_optimize()
    sparse = memoryview(bm.serialize())
    # CRoaring writes only the non-empty keys; re-emit its per-key bitmaps with the gaps filled.
    per_key = {key: sparse[a:b] for key, a, b in _walk_bitmap64(sparse, 0, len(sparse))}
    if not per_key:
        return struct.pack("<q", 0)
    max_key = max(per_key)
    out: list[bytes] = [struct.pack("<q", max_key + 1)]
    for key in range(max_key + 1):  # per key (2^32 rows each), not per row
        out.append(struct.pack("<i", key))
        out.append(bytes(per_key.get(key, _EMPTY_BITMAP32)))
    return b"".join(out)


# --------------------------------------------------------------------------------------------- reading


def read_dv(data: Buffer, offset: int, length: int | None, path: str) -> DeletionVector:
    """Decode the entry at ``offset`` of a DV index file.

    ``length`` is the manifest's ``f2`` (None to skip that check). Validates the version byte, magic,
    length (as Java does per variant), bounds, CRC and the bitmap structure; any problem raises
    ``CorruptMetadataError(path, ...)``.
    """
    buf = _byte_view(data)
    size = len(buf)
    _check_version(buf, path)
    if offset < 1 or offset + 8 > size:
        raise CorruptMetadataError(
            path, f"deletion-vector entry offset {offset} is outside the file ({size} bytes; an entry needs at "
            "least 8 bytes for its length and magic, and the first entry starts at offset 1)"
        )
    (stored_len,) = struct.unpack_from(">i", buf, offset)
    (magic_be,) = struct.unpack_from(">i", buf, offset + 4)
    (magic_le,) = struct.unpack_from("<i", buf, offset + 4)
    if magic_be == MAGIC_32:
        is_64 = False
        expected = length  # 32-bit: f2 is the length field itself
    elif magic_le == MAGIC_64:
        is_64 = True
        expected = None if length is None else length - 8  # 64-bit: f2 counts length field and CRC too
    else:
        raise CorruptMetadataError(
            path, f"bad deletion-vector magic 0x{magic_be & 0xFFFFFFFF:08x} at offset {offset + 4} "
            f"(expected 0x{MAGIC_32:08x} big-endian for 32-bit or 0x{MAGIC_64:08x} little-endian for 64-bit)"
        )
    kind = "64-bit" if is_64 else "32-bit"
    if expected is not None and stored_len != expected:
        raise CorruptMetadataError(
            path, f"{kind} deletion vector at offset {offset}: length field is {stored_len} but the index "
            f"manifest says {length}" + (" (f2 counts the whole entry, i.e. length field + 8)" if is_64 else "")
        )
    min_len = 4 + 8  # magic + (empty 32-bit bitmap | 64-bit bitmap count)
    if stored_len < min_len:
        raise CorruptMetadataError(
            path, f"{kind} deletion vector at offset {offset}: length field {stored_len} is smaller than the "
            f"minimum {min_len}"
        )
    body_start, body_end = offset + 8, offset + 4 + stored_len
    if body_end + 4 > size:
        raise CorruptMetadataError(
            path, f"truncated {kind} deletion vector at offset {offset}: entry needs {stored_len + 8} bytes "
            f"but only {size - offset} remain"
        )
    (stored_crc,) = struct.unpack_from(">I", buf, body_end)
    crc = zlib.crc32(buf[offset + 4 : body_end]) & 0xFFFFFFFF
    if crc != stored_crc:
        raise CorruptMetadataError(
            path, f"CRC mismatch in {kind} deletion vector at offset {offset}: stored 0x{stored_crc:08x} "
            f"at offset {body_end}, computed 0x{crc:08x}"
        )
    try:
        if is_64:
            _walk_bitmap64(buf, body_start, body_end, require_exact=True)
            bm: BitMap | BitMap64 = BitMap64.deserialize(bytes(buf[body_start:body_end]))
        else:
            used = _portable_size(buf, body_start, body_end)
            if used != body_end - body_start:
                raise FormatError(f"bitmap uses {used} bytes but the entry holds {body_end - body_start}")
            bm = BitMap.deserialize(bytes(buf[body_start:body_end]))
    except ValueError as e:
        raise CorruptMetadataError(
            path, f"malformed {kind} deletion-vector bitmap at offset {body_start}: {e}"
        ) from e
    dv = DeletionVector(bitmap64=is_64)
    dv._bm = bm
    return dv


def read_dv_index_file(data: Buffer, ranges: Iterable[DvRange], path: str) -> dict[str, DeletionVector]:
    """Decode every range of one index file; checks manifest cardinalities when present."""
    _check_version(_byte_view(data), path)
    out: dict[str, DeletionVector] = {}
    for r in ranges:
        if r.data_file in out:
            raise CorruptMetadataError(path, f"data file {r.data_file!r} has more than one deletion-vector range")
        dv = read_dv(data, r.offset, r.length, path)
        if r.cardinality is not None and dv.cardinality != r.cardinality:
            raise CorruptMetadataError(
                path, f"deletion vector for {r.data_file!r} at offset {r.offset}: index manifest cardinality "
                f"{r.cardinality} but the bitmap holds {dv.cardinality} positions"
            )
        out[r.data_file] = dv
    return out


def _byte_view(data: Buffer) -> memoryview:
    buf = memoryview(data)
    return buf if buf.format == "B" and buf.ndim == 1 else buf.cast("B")


def _check_version(buf: memoryview, path: str) -> None:
    if len(buf) < 1:
        raise CorruptMetadataError(path, "empty deletion-vector index file (expected version byte 0x01 at offset 0)")
    if buf[0] != DV_INDEX_VERSION:
        raise CorruptMetadataError(
            path, f"unsupported deletion-vector index file version {buf[0]} at offset 0 (expected {DV_INDEX_VERSION})"
        )


def _walk_bitmap64(
    buf: memoryview, start: int, end: int, require_exact: bool = False
) -> list[tuple[int, int, int]]:
    """Validate a 64-bit bitmap and return (key, begin, end) of each per-key 32-bit bitmap.

    Accepts Java's dense layout (empty bitmaps for missing keys) and CRoaring's sparse one; applies
    Java's checks (count in int range, keys ascending and <= Integer.MAX_VALUE - 1).
    """
    if end - start < 8:
        raise FormatError("64-bit bitmap truncated before its 8-byte bitmap count")
    (count,) = struct.unpack_from("<q", buf, start)
    # Each per-key bitmap needs >= 12 bytes (key + empty bitmap): bounds a corrupt count before looping.
    if count < 0 or count > (end - start - 8) // 12:
        raise FormatError(f"invalid bitmap count {count} for {end - start} bytes")
    p = start + 8
    last_key = -1
    out: list[tuple[int, int, int]] = []
    for _ in range(count):  # per 2^32-row key, not per row
        if p + 4 > end:
            raise FormatError(f"truncated before key at +{p - start}")
        (key,) = struct.unpack_from("<i", buf, p)
        if key < 0 or key > _MAX_KEY_64:
            raise FormatError(f"invalid key {key} at +{p - start}")
        if key <= last_key:
            raise FormatError(f"keys not in ascending order ({key} after {last_key}) at +{p - start}")
        p += 4
        n = _portable_size(buf, p, end)
        out.append((key, p, p + n))
        p += n
        last_key = key
    if require_exact and p != end:
        raise FormatError(f"64-bit bitmap uses {p - start} bytes but the entry holds {end - start}")
    return out


def _portable_size(buf: memoryview, start: int, end: int) -> int:
    """Byte size of the portable 32-bit RoaringBitmap at ``start``; ValueError if it overruns ``end``.

    Walks headers only (vectorised over containers; one step per run container, never per row).
    """

    def need(pos: int, n: int, what: str) -> None:
        if pos + n > end:
            raise FormatError(f"roaring bitmap truncated in {what} at +{pos - start}")

    need(start, 4, "cookie")
    (cookie,) = struct.unpack_from("<I", buf, start)
    p = start + 4
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        n = (cookie >> 16) + 1
        nbytes = (n + 7) // 8
        need(p, nbytes, "run-container flags")
        flags = np.frombuffer(buf[p : p + nbytes], dtype=np.uint8)
        is_run = np.unpackbits(flags, bitorder="little")[:n].astype(np.bool_)
        p += nbytes
        has_offsets = n >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        need(p, 4, "container count")
        (n,) = struct.unpack_from("<I", buf, p)
        p += 4
        if n > 65536:
            raise FormatError(f"container count {n} exceeds 65536")
        is_run = np.zeros(n, dtype=np.bool_)
        has_offsets = True
    else:
        raise FormatError(f"unknown roaring cookie 0x{cookie:08x}")
    need(p, 4 * n, "container headers")
    header = np.frombuffer(buf[p : p + 4 * n], dtype="<u2").reshape(n, 2)
    keys = header[:, 0].astype(np.int64)
    cards = header[:, 1].astype(np.int64) + 1
    if n > 1 and not bool(np.all(np.diff(keys) > 0)):
        raise FormatError("container keys not strictly ascending")
    p += 4 * n
    if has_offsets:
        need(p, 4 * n, "container offsets")
        p += 4 * n
    sizes = np.where(cards <= _ARRAY_MAX_CARD, 2 * cards, _BITSET_BYTES)
    sizes[is_run] = 0
    prefix = np.concatenate(([0], np.cumsum(sizes)))
    run_bytes = 0
    for i in np.flatnonzero(is_run):
        q = p + int(prefix[i]) + run_bytes
        need(q, 2, "run count")
        (n_runs,) = struct.unpack_from("<H", buf, q)
        run_bytes += 2 + 4 * n_runs
    total = p + int(prefix[-1]) + run_bytes - start
    need(start, total, "container data")
    return total


def _as_positions(positions: Positions) -> np.ndarray:
    """Any integer array/iterable -> 1-D int64 array (range checks are the caller's)."""
    if isinstance(positions, np.ndarray):
        arr = positions.ravel()
        if arr.dtype.kind not in "iu":
            raise TypeError(f"row positions must be integers, got dtype {arr.dtype}")
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise FormatError(f"row position {int(arr.max())} out of range")
        return arr.astype(np.int64, copy=False)
    try:
        if isinstance(positions, range):
            return np.arange(positions.start, positions.stop, positions.step, dtype=np.int64)
        if isinstance(positions, (list, tuple)):
            return np.asarray(positions, dtype=np.int64).ravel()
        return np.fromiter(positions, dtype=np.int64)
    except OverflowError as e:
        raise FormatError(f"row position out of range: {e}") from e
