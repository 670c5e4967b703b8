"""Paimon's data-file index (`file-index.*` options): the file format holding one or more indexes per column, the
bloom filter and the bitmap index — codec only, no policy. Written so that Java Paimon 0.9's `FileIndexFormat.Reader`,
`BloomFilterFileIndex` and `BitmapFileIndex` (v1) read it.

File (big-endian, `java.io.DataOutputStream`; strings are `writeUTF`: u16 length + modified UTF-8)::

    long  magic 1493475289347502 | int version 1 | int head length (bytes from the magic to the body)
    int   columns
    per column: utf name | int indexes | per index: utf type ("bloom-filter", "bitmap") | int start | int length
    int   redundant length (0)
    body: the indexes' bytes; `start` counts from the file's first byte

Bloom filter (`BloomFilter64`): int number of hash functions, then the bit set — `numBits / 8` bytes, bit `p` in
byte `p >> 3` at `1 << (p & 7)`. numBits = n + 8 - n % 8 with n = (int)(-items · ln(fpp) / ln(2)²); k =
max(1, round(numBits / items · ln 2)). A value's 64-bit hash h (xxHash64, seed 0, of the UTF-8 / raw bytes of
strings and binaries; Thomas Wang's 64-bit integer hash of integers, sign-extended) sets, for i = 1..k, bit
`c % numBits` where c = int32(low32(h) + i · high32(h)), bit-flipped when negative. Defaults: items 1,000,000,
fpp 0.1 (`file-index.bloom-filter.<column>.items` / `.fpp`).

Bitmap (v1)::

    byte 1 | int rows | int distinct non-null values | bool has nulls | [int offset of the null bitmap]
    per value (first-seen order here; Java's HashMap order — any order reads): value | int offset
    [null bitmap] | the bitmaps of values seen more than once, in the same order

A value is an int (TINYINT byte, SMALLINT short, INT / DATE int, BIGINT long) or a string (int length + UTF-8). A
value (or null) in exactly one row stores no bitmap: its offset is -1 - row; otherwise the offset of its bitmap
(portable RoaringBitmap serialisation) from the end of the header, the null bitmap first.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import xxhash
from pyroaring import BitMap

from paimon_ops.errors import CorruptMetadataError, UnsupportedError

MAGIC = 1493475289347502
VERSION = 1
BLOOM_FILTER, BITMAP = "bloom-filter", "bitmap"
INDEX_TYPES = (BLOOM_FILTER, BITMAP)
DEFAULT_ITEMS, DEFAULT_FPP = 1_000_000, 0.1
BITMAP_VERSION = 1

# Types each index handles (Paimon's `DataType.root` names), and how a value is written in a bitmap.
_STRINGS = ("CHAR", "VARCHAR")
_INTS = {"TINYINT": ">b", "SMALLINT": ">h", "INTEGER": ">i", "INT": ">i", "DATE": ">i", "BIGINT": ">q"}
BLOOM_TYPES = frozenset(_STRINGS + ("BINARY", "VARBINARY") + tuple(_INTS))
BITMAP_TYPES = frozenset(_STRINGS + tuple(_INTS))


def supported(index_type: str, type_root: str) -> bool:
    return type_root in (BLOOM_TYPES if index_type == BLOOM_FILTER else BITMAP_TYPES if index_type == BITMAP else ())


# ---------------------------------------------------------------------------------------------- hashes
_M64 = (1 << 64) - 1


def _wang64(values: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash (FastHash.getLongHash) of int64 values, vectorised; Java's `>>` is an
    arithmetic shift and every sum wraps."""
    with np.errstate(over="ignore"):
        k = values.astype(np.int64)
        k = (~k) + (k << np.int64(21))
        k = k ^ (k >> np.int64(24))
        k = (k + (k << np.int64(3))) + (k << np.int64(8))
        k = k ^ (k >> np.int64(14))
        k = (k + (k << np.int64(2))) + (k << np.int64(4))
        k = k ^ (k >> np.int64(28))
        k = k + (k << np.int64(31))
    return k.view(np.uint64)


def hashes(column: pa.Array | pa.ChunkedArray, type_root: str) -> np.ndarray:
    """The 64-bit FastHash of every non-null value of `column` (uint64)."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    col = col.drop_null()
    if type_root in _INTS:
        return _wang64(np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False)))
    if type_root in _STRINGS or type_root in ("BINARY", "VARBINARY"):
        h = xxhash.xxh64_intdigest
        raw = col.cast(pa.binary()) if type_root in _STRINGS else col
        return np.fromiter((h(v) for v in raw.to_pylist()), dtype=np.uint64, count=len(raw))
    raise UnsupportedError(f"a bloom-filter file index on a {type_root} column is not supported")


# ---------------------------------------------------------------------------------------------- bloom filter
@dataclass(frozen=True)
class BloomFilter:
    num_hashes: int
    bits: np.ndarray  # uint8, numBits / 8 bytes

    @property
    def num_bits(self) -> int:
        return len(self.bits) * 8

    @staticmethod
    def sized(items: int, fpp: float) -> BloomFilter:
        if not 0 < fpp < 1:
            raise UnsupportedError(f"bloom filter fpp must be in (0, 1), got {fpp}")
        if items <= 0:
            raise UnsupportedError(f"bloom filter items must be positive, got {items}")
        n = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = n + 8 - n % 8
        k = max(1, _java_round(num_bits / items * math.log(2)))
        return BloomFilter(k, np.zeros(num_bits // 8, dtype=np.uint8))

    def _positions(self, h: np.ndarray) -> np.ndarray:
        lo = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
        hi = (h >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
        out = []
        for i in range(1, self.num_hashes + 1):
            c = ((lo + i * hi + (1 << 31)) % (1 << 32) - (1 << 31))  # int32 wrap-around
            c = np.where(c < 0, ~c, c)
            out.append(c % self.num_bits)
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def add(self, h: np.ndarray) -> None:
        pos = np.unique(self._positions(h))
        np.bitwise_or.at(self.bits, pos >> 3, (np.uint8(1) << (pos & 7).astype(np.uint8)))

    def might_contain(self, h: int) -> bool:
        pos = self._positions(np.array([h], dtype=np.uint64))
        return bool(np.all(self.bits[pos >> 3] & (np.uint8(1) << (pos & 7).astype(np.uint8))))

    def serialize(self) -> bytes:
        return struct.pack(">i", self.num_hashes) + self.bits.tobytes()

    @staticmethod
    def deserialize(data: bytes, where: str = "bloom filter") -> BloomFilter:
        if len(data) < 5:
            raise CorruptMetadataError(where, "bloom filter index too short")
        return BloomFilter(struct.unpack(">i", data[:4])[0], np.frombuffer(data, dtype=np.uint8, offset=4).copy())


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)


def bloom_filter(column: pa.Array | pa.ChunkedArray, type_root: str, items: int = DEFAULT_ITEMS,
                 fpp: float = DEFAULT_FPP) -> bytes:
    f = BloomFilter.sized(items, fpp)
    f.add(hashes(column, type_root))
    return f.serialize()


# ---------------------------------------------------------------------------------------------- bitmap
def _value_bytes(value: Any, type_root: str) -> bytes:
    if type_root in _STRINGS:
        b = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return struct.pack(">i", len(b)) + b
    return struct.pack(_INTS[type_root], value)


def bitmap_index(column: pa.Array | pa.ChunkedArray, type_root: str) -> bytes:
    """The v1 bitmap index of `column` (rows in file order)."""
    if type_root not in BITMAP_TYPES:
        raise UnsupportedError(f"a bitmap file index on a {type_root} column is not supported")
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if type_root == "DATE":
        col = col.cast(pa.int32())
    values = col.to_pylist()
    rows: dict[Any, list[int]] = {}
    nulls: list[int] = []
    for i, v in enumerate(values):
        if v is None:
            nulls.append(i)
        else:
            rows.setdefault(v, []).append(i)
    null_bytes = BitMap(nulls).serialize() if len(nulls) > 1 else b""
    offset = len(null_bytes)
    head = [struct.pack(">BiI", BITMAP_VERSION, len(values), len(rows)), struct.pack(">?", bool(nulls))]
    if nulls:
        head.append(struct.pack(">i", -1 - nulls[0] if len(nulls) == 1 else 0))
    body = [null_bytes]
    for v, at in rows.items():
        if len(at) == 1:
            head.append(_value_bytes(v, type_root) + struct.pack(">i", -1 - at[0]))
            continue
        bm = BitMap(at).serialize()
        head.append(_value_bytes(v, type_root) + struct.pack(">i", offset))
        body.append(bm)
        offset += len(bm)
    return b"".join(head + body)


def bitmap_rows(data: bytes, type_root: str, value: Any, where: str = "bitmap index") -> list[int]:
    """The rows holding `value` (None: nulls) in a v1 bitmap index (a reader for tests and checks)."""
    try:
        version, n_rows, n_values, has_null = struct.unpack_from(">BiI?", data, 0)
        if version != BITMAP_VERSION:
            raise CorruptMetadataError(where, f"bitmap index version {version}")
        pos = 10
        null_offset = None
        if has_null:
            (null_offset,) = struct.unpack_from(">i", data, pos)
            pos += 4
        offsets: list[tuple[Any, int]] = []
        for _ in range(n_values):
            if type_root in _STRINGS:
                (length,) = struct.unpack_from(">i", data, pos)
                v: Any = data[pos + 4:pos + 4 + length].decode("utf-8")
                pos += 4 + length
            else:
                fmt = _INTS[type_root]
                (v,) = struct.unpack_from(fmt, data, pos)
                pos += struct.calcsize(fmt)
            (off,) = struct.unpack_from(">i", data, pos)
            pos += 4
            offsets.append((v, off))
    except struct.error as e:
        raise CorruptMetadataError(where, f"truncated bitmap index: {e}") from None
    want = null_offset if value is None else next((o for v, o in offsets if v == value), None)
    if want is None or (value is None and not has_null):
        return []
    if want < 0:
        return [-1 - want]
    return list(BitMap.deserialize(data[pos + want:]))


# ---------------------------------------------------------------------------------------------- the file
def java_hash_order(names: Iterable[str]) -> list[str]:
    """`names` in the iteration order of a Java HashMap holding them as keys (small maps: by bucket, then insertion),
    so that a file written here has Java's layout."""
    names = list(names)
    cap = 16
    while len(names) > cap * 0.75:
        cap *= 2

    def bucket(s: str) -> int:
        h = 0
        data = s.encode("utf-16-be")  # String.hashCode over UTF-16 code units
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)
    return [n for _, _, n in sorted((bucket(n), i, n) for i, n in enumerate(names))]


def _utf(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def write_file_index(indexes: Mapping[str, Mapping[str, bytes]]) -> bytes:
    """The index file of `indexes` (column -> index type -> serialised index); b"" when there is none."""
    if not indexes:
        return b""
    columns = java_hash_order(indexes)
    order = {c: java_hash_order(indexes[c]) for c in columns}
    names = b"".join(_utf(c) + b"".join(_utf(t) for t in order[c]) for c in columns)
    head_length = 8 + 4 + 4 + 4 + sum(len(v) for v in order.values()) * 8 + len(columns) * 4 + 4 + len(names)
    head = [struct.pack(">qii", MAGIC, VERSION, head_length), struct.pack(">i", len(columns))]
    body: list[bytes] = []
    at = 0
    for c in columns:
        head.append(_utf(c) + struct.pack(">i", len(order[c])))
        for t in order[c]:
            data = indexes[c][t]
            head.append(_utf(t) + struct.pack(">ii", head_length + at, len(data)))
            body.append(data)
            at += len(data)
    head.append(struct.pack(">i", 0))
    out = b"".join(head)
    assert len(out) == head_length
    return out + b"".join(body)


def read_head(data: bytes, where: str = "file index") -> tuple[int, dict[str, dict[str, tuple[int, int]]]]:
    """(head length, column -> index type -> (start, length)) from the first bytes of an index file (at least its
    head: `head_length(data[:16])` says how many)."""
    try:
        magic, version, head_length = struct.unpack_from(">qii", data, 0)
        if magic != MAGIC:
            raise CorruptMetadataError(where, "not a Paimon file index (bad magic)")
        if version != VERSION:
            raise CorruptMetadataError(where, f"file index version {version}; paimon-ops reads version {VERSION}")
        pos = 16
        (n_cols,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for _ in range(n_cols):
            col, pos = _read_utf(data, pos)
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            for _ in range(n):
                t, pos = _read_utf(data, pos)
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start < head_length or length < 0:
                    raise CorruptMetadataError(where, f"index {t} of {col} lies outside the file")
                out.setdefault(col, {})[t] = (start, length)
        return head_length, out
    except (struct.error, UnicodeDecodeError) as e:
        raise CorruptMetadataError(where, f"truncated file index: {e}") from None


def head_length(first16: bytes, where: str = "file index") -> int:
    """How many bytes the head of an index file takes (from its first 16 bytes)."""
    if len(first16) < 16:
        raise CorruptMetadataError(where, "truncated file index")
    return int(struct.unpack_from(">i", first16, 12)[0])


def read_file_index(data: bytes, where: str = "file index") -> dict[str, dict[str, bytes]]:
    """column -> index type -> serialised index, from an index file (or an embedded index)."""
    _, head = read_head(data, where)
    out: dict[str, dict[str, bytes]] = {}
    for col, types in head.items():
        for t, (start, length) in types.items():
            if start + length > len(data):
                raise CorruptMetadataError(where, f"index {t} of {col} lies outside the file")
            out.setdefault(col, {})[t] = data[start:start + length]
    return out


def _read_utf(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, pos)
    return data[pos + 2:pos + 2 + n].decode("utf-8"), pos + 2 + n


def build_indexes(table: pa.Table, columns: Sequence[tuple[str, str, str, Mapping[str, str]]]) -> dict[str, dict[str, bytes]]:
    """column -> index type -> bytes for (column, type root, index type, its options) over the rows of `table`."""
    out: dict[str, dict[str, bytes]] = {}
    for name, root, index_type, opts in columns:
        if index_type == BLOOM_FILTER:
            items = int(opts.get("items", DEFAULT_ITEMS))
            fpp = float(opts.get("fpp", DEFAULT_FPP))
            data = bloom_filter(table.column(name), root, items, fpp)
        elif index_type == BITMAP:
            data = bitmap_index(table.column(name), root)
        else:
            raise UnsupportedError(f"file index type {index_type!r} is not supported (paimon-ops writes "
                                   f"{', '.join(INDEX_TYPES)})")
        out.setdefault(name, {})[index_type] = data
    return out


__all__ = ["MAGIC", "BLOOM_FILTER", "BITMAP", "INDEX_TYPES", "BloomFilter", "bloom_filter", "bitmap_index",
           "bitmap_rows", "hashes", "write_file_index", "read_file_index", "build_indexes", "supported",
           "java_hash_order", "BLOOM_TYPES", "BITMAP_TYPES", "read_head", "head_length"]
