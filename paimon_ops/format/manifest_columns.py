"""Many manifests decoded at once, column-wise, by a native Avro reader (DataFusion's, into Arrow arrays).

fastavro decodes one Python dict per entry (~15 µs for a manifest entry with its nested stats records), which
bounds expiry and orphan scans of tables with millions of entries. Here the manifests of a batch that share a
writer schema and codec are spliced into one Avro container (their data blocks re-framed behind one header: a few
byte operations per block, none per entry), decoded by DataFusion into Arrow columns in native code, and split back
into one `ManifestColumns` per manifest. Only the columns lifecycle decisions need become Python lists; statistics
are never converted.

Validation is the same as `manifest.read_manifest_columns`: required fields from the file's own header, entry
version and kind, plain file names (vectorised). Anything this path cannot decode — DataFusion missing, a header
that differs, a block that does not parse, an error in native code — falls back to fastavro for that manifest, so
what is accepted or refused never depends on which decoder ran (tests/format compare both on Java- and
pypaimon-written manifests).
"""
from __future__ import annotations

import contextlib
import importlib.abc
import logging
import operator
import os
import sys
import threading
from typing import Any, Iterator, Sequence

import paimon_ops.format.manifest as mf
from paimon_ops.errors import CorruptMetadataError

log = logging.getLogger(__name__)

_SYNC = 16
_lock = threading.Lock()
_ctx: Any = None
_unavailable = False
# Below this many entries in a batch the fixed cost of a native read (~2 ms) is not worth it.
MIN_NATIVE_BYTES = 64 * 1024


class _NoPandas(importlib.abc.MetaPathFinder):
    """Refuses `import pandas` on the thread importing DataFusion (other threads import as usual)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("pandas is not imported for the native Avro reader", name=name)
        return None


@contextlib.contextmanager
def _without_pandas() -> Iterator[None]:
    """Import DataFusion without pandas (~55 MiB of RSS, ~0.3 s): its module init builds a pyarrow scalar, and
    pyarrow's pandas shim imports pandas on its first type check. Refused there, the shim only notes "no pandas" for
    those checks; whatever later needs pandas through pyarrow (`to_pandas`, `from_pandas`) imports it then, as
    pyarrow retries the import when pandas is required. Nothing to do when pandas is already loaded."""
    if "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _context() -> Any:
    global _ctx, _unavailable
    if _ctx is None and not _unavailable:
        try:
            with _without_pandas():
                from datafusion import SessionConfig, SessionContext
            # one partition: rows come back in file order (the order of a delta's entries carries meaning)
            _ctx = SessionContext(SessionConfig().with_target_partitions(1))
        except Exception as e:  # noqa: BLE001 - optional accelerator: fastavro does the same work
            log.debug("native Avro reader unavailable (%s); manifests are decoded by fastavro", e)
            _unavailable = True
    return _ctx


def _blocks(data: bytes, start: int) -> tuple[list[tuple[int, int, int]], bytes] | None:
    """(count, offset of the block's data, size) of every block after the header, and the file's sync marker."""
    sync = data[start:start + _SYNC]
    pos = start + _SYNC
    out = []
    n = len(data)
    while pos < n:
        count, pos = mf._read_long(data, pos)
        size, pos = mf._read_long(data, pos)
        if count < 0 or size < 0 or pos + size + _SYNC > n or data[pos + size:pos + size + _SYNC] != sync:
            return None
        out.append((count, pos, size))
        pos += size + _SYNC
    return out, sync


def _splice(datas: Sequence[bytes]) -> tuple[bytes, list[int]] | None:
    """One Avro container with the blocks of all `datas` (which must share their header), rows per manifest."""
    header_end = mf._header_end(datas[0])
    header = datas[0][:header_end]
    parts = [header, datas[0][header_end:header_end + _SYNC]]
    sync = parts[1]
    rows = []
    for d in datas:
        if d[:header_end] != header:
            return None
        framed = _blocks(d, header_end)
        if framed is None:
            return None
        blocks, _ = framed
        total = 0
        for count, off, size in blocks:
            parts += [mf._zigzag(count), mf._zigzag(size), d[off:off + size], sync]
            total += count
        rows.append(total)
    return b"".join(parts), rows


def _int_list(col: Any) -> list:
    """The values of an integer column without nulls, through a zero-copy NumPy view of its buffer (pyarrow's own
    `to_numpy` goes through its pandas shim, which imports pandas)."""
    import numpy as np
    import pyarrow as pa
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_integer(arr.type):
        return arr.to_pylist()
    dtype = np.dtype(str(arr.type))
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize).tolist()


def _pylist(col: Any, n: int, ints: bool = False) -> list:
    if col is None or col.null_count == n:
        return [None] * n
    if ints and col.null_count == 0:
        return _int_list(col)
    return col.to_pylist()


def _repeated(col: Any, n: int) -> list:
    """A column of few distinct values (partitions) as a list sharing one Python object per value: converted
    through its dictionary (less to convert, less to hold)."""
    if n < 64 or col.null_count:
        return col.to_pylist()

    import pyarrow.compute as pc
    enc = pc.dictionary_encode(col).combine_chunks()
    values = enc.dictionary.to_pylist()
    idx = _int_list(enc.indices)
    if len(values) == 1:
        return values * n
    return list(operator.itemgetter(*idx)(values))


def _batch_columns(table: Any) -> tuple[list, mf.ManifestColumns]:
    """(_VERSION, the lifecycle columns) of a whole decoded batch: one conversion per column, none per entry
    beyond building the Python list (statistics columns are never converted)."""
    import pyarrow.compute as pc
    n = table.num_rows
    f = table.column("_FILE").combine_chunks()
    child = {f.type.field(i).name for i in range(f.type.num_fields)}

    def field(name: str, ints: bool = False) -> list:
        return _pylist(f.field(name) if name in child else None, n, ints)

    xs = f.field("_EXTRA_FILES")
    if n and pc.max(pc.list_value_length(xs)).as_py():
        extra = [tuple(x) if x else () for x in xs.to_pylist()]
    else:
        extra = [()] * n
    cols = mf.ManifestColumns(
        _pylist(table.column("_KIND"), n, True), _repeated(table.column("_PARTITION"), n),
        _pylist(table.column("_BUCKET"), n, True), field("_LEVEL", True), f.field("_FILE_NAME").to_pylist(),
        field("_FILE_SIZE", True), extra, field("_EMBEDDED_FILE_INDEX"), field("_EXTERNAL_PATH"),
        field("_FILE_SOURCE", True))
    return _pylist(table.column("_VERSION"), n, True), cols


def _slice(version: list, c: mf.ManifestColumns, start: int, n: int, path: str) -> mf.ManifestColumns:
    """Rows [start, start + n) of a batch: one manifest, validated as read_manifest_columns validates it."""
    end = start + n
    for v in set(version[start:end]):
        if v != mf.MANIFEST_VERSION:
            mf._check_version(v, mf.MANIFEST_VERSION, path, "manifest entry")
    out = mf.ManifestColumns(*(getattr(c, k)[start:end] for k in mf.ManifestColumns.__slots__))
    mf._check_entries(path, out.kind, out.file_name,
                      [(nm, x) for nm, x in zip(out.file_name, out.extra_files) if x])
    return out


def _native(datas: Sequence[bytes], paths: Sequence[str]) -> list[mf.ManifestColumns] | None:
    ctx = _context()
    if ctx is None:
        return None
    try:
        fs = mf._open_avro(datas[0], paths[0], mf.MANIFEST)[1]
        mf._require(fs, paths[0], mf._MANIFEST_REQUIRED)
        spliced = _splice(datas)
        if spliced is None:
            return None
        blob, rows = spliced
        fd = os.memfd_create("paimon-ops-manifests", os.MFD_CLOEXEC)
        try:
            os.write(fd, blob)
            with _lock:
                table = ctx.read_avro(f"/proc/self/fd/{fd}", file_extension="").to_arrow_table()
        finally:
            os.close(fd)
        if table.num_rows != sum(rows):
            return None
        version, cols = _batch_columns(table)
        out, start = [], 0
        for n, p in zip(rows, paths):
            out.append(_slice(version, cols, start, n, p))
            start += n
        return out
    except CorruptMetadataError:
        raise
    except Exception as e:  # noqa: BLE001 - anything the native path cannot do, fastavro does (or refuses)
        log.debug("native Avro decode of %d manifest(s) failed (%s); using fastavro", len(datas), e)
        return None


def read_many(datas: Sequence[bytes], paths: Sequence[str]) -> list[mf.ManifestColumns]:
    """`mf.read_manifest_columns` of each manifest, decoded natively in groups sharing a header where possible."""
    out: list[mf.ManifestColumns | None] = [None] * len(datas)
    if hasattr(os, "memfd_create") and sum(len(d) for d in datas) >= MIN_NATIVE_BYTES:
        groups: dict[bytes, list[int]] = {}
        for i, d in enumerate(datas):
            try:
                groups.setdefault(d[:mf._header_end(d)], []).append(i)
            except (IndexError, ValueError):
                continue  # not even a header: fastavro names the problem
        for idx in groups.values():
            got = _native([datas[i] for i in idx], [paths[i] for i in idx])
            if got is not None:
                for i, cols in zip(idx, got):
                    out[i] = cols
    return [c if c is not None else mf.read_manifest_columns(d, p) for c, d, p in zip(out, datas, paths)]


__all__ = ["read_many", "MIN_NATIVE_BYTES"]
