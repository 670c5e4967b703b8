"""Helpers for the tag tests (no tests here): tables with controlled commit times, fast fake histories."""
from __future__ import annotations

import posixpath
from typing import Sequence

import pendulum
import pyarrow as pa

from paimon_ops.table.table import EARLIEST, LATEST, FileStoreTable
from tests.tables import make_table, write

FIELDS = [("k", "INT"), ("v", "STRING")]


def ms(*args: int, tz: str = "UTC") -> int:
    """Epoch millis of a wall-clock time in a zone (pendulum resolves gaps forward, overlaps to the first)."""
    return int(pendulum.datetime(*args, tz=tz).timestamp() * 1000)


def hours(n: float) -> int:
    return int(n * 3_600_000)


def commit_rows(table: FileStoreTable, rows: Sequence[int], at_ms: int) -> int:
    """One real APPEND commit of rows (k, 'v<k>') with a controlled commit time; returns the snapshot id."""
    snap = write(table, {"k": pa.array(list(rows), pa.int32()), "v": [f"v{k}" for k in rows]}, now_millis=at_ms)
    assert snap is not None
    return snap.id


def real_table(warehouse: str, name: str, options: dict[str, str] | None = None, times: Sequence[int] = (),
               primary_key: bool = False) -> FileStoreTable:
    """A table with one real commit per time (row k = index), for tests that read data or reclaim files."""
    t = make_table(warehouse, f"db.{name}", FIELDS, primary_keys=("k",) if primary_key else (),
                   options={**({"bucket": "1"} if primary_key else {}), **(options or {})})
    for i, at in enumerate(times):
        commit_rows(t, [i], at)
    return t.refresh()


def _steady(table: FileStoreTable, source) -> dict:
    """Manifest lists of a table that stays as snapshot `source` left it: the base holds its base and delta
    manifests, the delta nothing — so fake snapshots after it read as one real history of empty commits (a copy of
    `source` under the next id would not: its base would lack the source's delta, and every writing operation
    refuses such a history)."""
    import uuid

    from paimon_ops.format import manifest as mf
    from paimon_ops.table.scan import ManifestStore
    store = ManifestStore(table)
    if not store.manifest_list(source.delta_manifest_list):  # already steady
        return {}
    token = uuid.uuid5(uuid.NAMESPACE_URL, f"{table.root}#{source.id}#{source.base_manifest_list}")
    base, delta = f"manifest-list-{token}-0", f"manifest-list-{token}-1"
    if not table.io.exists(table.manifest_path(base)):
        metas = store.manifest_list(source.base_manifest_list) + store.manifest_list(source.delta_manifest_list)
        table.io.write_bytes(table.manifest_path(base), mf.write_manifest_list(metas))
        table.io.write_bytes(table.manifest_path(delta), mf.write_manifest_list([]))
    return {"base_manifest_list": base, "base_manifest_list_size": table.io.size(table.manifest_path(base)),
            "delta_manifest_list": delta, "delta_manifest_list_size": table.io.size(table.manifest_path(delta)),
            "delta_record_count": 0}


def fake_history(warehouse: str, name: str, options: dict[str, str] | None, times: Sequence[int],
                 watermarks: Sequence[int | None] | None = None) -> FileStoreTable:
    """A table whose snapshots 1..n have the given commit times (and watermarks) — fast: one real commit, then
    copies of its snapshot JSON with other ids/times (tag logic only reads snapshot JSON)."""
    t = make_table(warehouse, f"db.{name}", FIELDS, options=options or {})
    commit_rows(t, [0], times[0])
    t = t.refresh()
    first = t.snapshots.snapshot(1)
    wm = list(watermarks) if watermarks is not None else [None] * len(times)
    t.io.write_bytes(t.snapshots.path(1), first.with_(watermark=wm[0]).to_json().encode())
    steady = _steady(t, first) if len(times) > 1 else {}
    for i, at in enumerate(times[1:], start=2):
        assert t.snapshots.commit(first.with_(id=i, time_millis=at, watermark=wm[i - 1], **steady))
    t.snapshots.write_hint(LATEST, len(times))
    return t.refresh()


def add_fake_snapshot(table: FileStoreTable, at_ms: int, watermark: int | None = None) -> int:
    latest = table.snapshots.latest()
    assert latest is not None
    sid = latest.id + 1
    assert table.snapshots.commit(latest.with_(id=sid, time_millis=at_ms, watermark=watermark,
                                                  **_steady(table, latest)))
    table.snapshots.write_hint(LATEST, sid)
    return sid


def drop_snapshots_below(table: FileStoreTable, first_kept: int) -> None:
    """Simulate expired snapshot metadata (files of data are irrelevant to tag selection)."""
    for i in table.snapshots.list_ids():
        if i < first_kept:
            table.io.delete_file(table.snapshots.path(i))
    table.snapshots.write_hint(EARLIEST, first_kept)


def tag_ids(table: FileStoreTable) -> dict[str, int]:
    return {n: t.id for n, t in table.tags.tags()}


def tag_dir_listing(table: FileStoreTable) -> list[str]:
    d = posixpath.join(table.branch_root, "tag")
    return sorted(st.name for st in table.io.list_status(d))
