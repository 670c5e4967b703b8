"""Sort keys for sort compaction (maintenance.md §7.3): `order`, `zorder`, `hilbert`, vectorised with numpy.

Every column is first mapped to an order-preserving unsigned image (signed ints with the sign bit flipped,
IEEE floats with the usual bit trick, strings / binaries as their first `var_len` bytes zero-padded, nulls as
all zeros — nulls first). Z-order interleaves the images' bits round robin from the most significant bit;
Hilbert applies Skilling's transform (axes -> transposed Hilbert index) to the full 64-bit images and then
interleaves the same way. The key is a byte string per row, sorted bytewise.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.errors import InvalidArgumentError

STRATEGIES = ("order", "zorder", "hilbert")
_SIGN = np.uint64(1 << 63)
HILBERT_BITS = 64


def _fixed_image(arr: pa.Array) -> np.ndarray:
    """uint64 order-preserving image of a fixed-width column (nulls -> 0)."""
    t = arr.type
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_boolean(t):
        img = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64) + np.uint64(1)
    elif pa.types.is_floating(t):
        f = np.asarray(arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits = f.view(np.uint64)
        img = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    elif pa.types.is_decimal(t):
        f = np.asarray(arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits = f.view(np.uint64)
        img = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    else:
        if pa.types.is_temporal(t) or pa.types.is_integer(t):
            ints = arr.cast(pa.int64()) if not (pa.types.is_temporal(t)) else arr.view(_int_of(t)).cast(pa.int64())
        else:
            raise InvalidArgumentError(f"sort compaction cannot build a z-order / hilbert image of type {t}")
        v = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        img = v.view(np.uint64) ^ _SIGN
    return np.where(valid, img, np.uint64(0)).astype(np.uint64)


def _int_of(t: pa.DataType) -> pa.DataType:
    return pa.int32() if t.bit_width == 32 else pa.int64()


def _var_image(arr: pa.Array, width: int) -> np.ndarray:
    """(n, width) uint8 matrix: the first `width` bytes of each string / binary, zero padded (nulls -> 0)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_binary() if pa.types.is_large_string(arr.type) else pa.binary())
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        pass
    else:
        raise InvalidArgumentError(f"sort compaction cannot build an image of type {arr.type}")
    n = len(arr)
    bufs = arr.buffers()
    off_dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=off_dtype)[arr.offset:arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(1, np.uint8)
    if data.size == 0:
        data = np.zeros(1, np.uint8)
    lengths = offsets[1:] - offsets[:-1]
    if arr.null_count:
        lengths = np.where(np.asarray(arr.is_null().to_numpy(zero_copy_only=False)), 0, lengths)
    cols = np.arange(width)
    idx = offsets[:-1, None] + cols[None, :]
    mask = cols[None, :] < lengths[:, None]
    return np.where(mask, data[np.clip(idx, 0, data.size - 1)], 0).astype(np.uint8)


def _bits(arr: pa.Array, var_len: int) -> np.ndarray:
    """(n, nbits) bool matrix of a column's order-preserving image, most significant bit first."""
    if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type) or pa.types.is_large_string(arr.type) \
            or pa.types.is_large_binary(arr.type):
        return np.unpackbits(_var_image(arr, var_len), axis=1).astype(bool)
    img = _fixed_image(arr)
    return np.unpackbits(img.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1).astype(bool)


def _interleave(bit_cols: list[np.ndarray]) -> np.ndarray:
    """Round-robin bit interleave (MSB first); shorter columns drop out. Returns (n, nbytes) uint8."""
    n = bit_cols[0].shape[0]
    longest = max(b.shape[1] for b in bit_cols)
    picks = [b[:, i] for i in range(longest) for b in bit_cols if i < b.shape[1]]
    out = np.stack(picks, axis=1) if picks else np.zeros((n, 8), bool)
    return np.packbits(out, axis=1)


def _order_of_bytes(mat: np.ndarray) -> np.ndarray:
    """Row order of a (n, nbytes) uint8 matrix compared bytewise (stable)."""
    n, width = mat.shape
    pad = (-width) % 8
    if pad:
        mat = np.concatenate([mat, np.zeros((n, pad), np.uint8)], axis=1)
    words = mat.view(">u8").reshape(n, -1).astype(np.uint64)
    return np.lexsort([words[:, i] for i in range(words.shape[1] - 1, -1, -1)])


def zorder_key(data: pa.Table, columns: list[str], var_len: int = 8) -> np.ndarray:
    cols = [data.column(c).combine_chunks() for c in columns]
    return _interleave([_bits(c, var_len) for c in cols])


def _hilbert_axes(cols: list[pa.Array], var_len: int) -> list[np.ndarray]:
    out = []
    for c in cols:
        if pa.types.is_string(c.type) or pa.types.is_binary(c.type) or pa.types.is_large_string(c.type) \
                or pa.types.is_large_binary(c.type):
            m = _var_image(c, 8)
            v = m.view(">u8").reshape(-1).astype(np.uint64)
        else:
            v = _fixed_image(c)
        out.append((v >> np.uint64(64 - HILBERT_BITS)).astype(np.uint64))
    return out


def hilbert_key(data: pa.Table, columns: list[str], var_len: int = 8) -> np.ndarray:
    """Skilling's AxestoTranspose over `HILBERT_BITS`-bit axes, then bit interleave of the transposed axes."""
    x = _hilbert_axes([data.column(c).combine_chunks() for c in columns], var_len)
    ndim = len(x)
    m = np.uint64(1 << (HILBERT_BITS - 1))
    q = m
    one = np.uint64(1)
    while q > one:
        p = q - one
        for i in range(ndim):
            hit = (x[i] & q) != 0
            t = (x[0] ^ x[i]) & p
            x0 = np.where(hit, x[0] ^ p, x[0] ^ t)
            xi = np.where(hit, x[i], x[i] ^ t)
            if i == 0:
                x[0] = np.where(hit, x[0] ^ p, x[0])
            else:
                x[0], x[i] = x0, xi
        q >>= one
    for i in range(1, ndim):
        x[i] = x[i] ^ x[i - 1]
    t = np.zeros_like(x[0])
    q = m
    while q > one:
        t = np.where((x[ndim - 1] & q) != 0, t ^ (q - one), t)
        q >>= one
    for i in range(ndim):
        x[i] = x[i] ^ t
    bit_cols = [np.unpackbits((v << np.uint64(64 - HILBERT_BITS)).astype(">u8").view(np.uint8).reshape(-1, 8),
                              axis=1)[:, :HILBERT_BITS].astype(bool) for v in x]
    return _interleave(bit_cols)


def sort_indices(data: pa.Table, columns: list[str], strategy: str = "order", var_len: int = 8) -> pa.Array:
    """Row order of `data` under the sort strategy (nulls first, ascending)."""
    if not columns:
        raise InvalidArgumentError("sort compaction needs order_by columns")
    missing = [c for c in columns if c not in data.column_names]
    if missing:
        raise InvalidArgumentError(f"order_by columns {missing} are not columns of the table")
    if data.num_rows == 0:
        return pa.array([], pa.int64())
    if strategy == "order" or (strategy == "hilbert" and len(columns) == 1):
        return pc.sort_indices(data, sort_keys=[(c, "ascending") for c in columns], null_placement="at_start")
    if strategy == "zorder":
        return pa.array(_order_of_bytes(zorder_key(data, columns, var_len)))
    if strategy == "hilbert":
        return pa.array(_order_of_bytes(hilbert_key(data, columns, var_len)))
    raise InvalidArgumentError(f"unknown sort strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


__all__ = ["sort_indices", "zorder_key", "hilbert_key", "STRATEGIES"]
