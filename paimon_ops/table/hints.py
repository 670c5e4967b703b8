"""The LATEST and EARLIEST hints of `snapshot/` and `changelog/` (format.md §3.3): what each must say, decided from
the directory's listing, and writing it — the one piece of code for both. Every operation that writes or repairs
hints goes through here: the `repair` operation, the executor's ensure-hints step (snapshot expiry, rollback) and any
operation that deletes snapshot files.

What a hint must say: LATEST the newest snapshot file, EARLIEST the oldest one (or, given explicitly, the first of the
contiguous run ending at the latest snapshot — Java's `repair_earliest_snapshot`, for a gap below it). Readers verify
hints, but Java 0.9 only half: it trusts LATEST = N whenever `snapshot-(N+1)` does not exist — so a LATEST left
behind by a crashed writer (older than the earliest snapshot) makes every Java reader and writer resolve the latest
snapshot to a deleted file, and its reads and commits fail — and it trusts EARLIEST whenever that snapshot exists,
skipping older ones. A hint that is missing or unreadable is written too: readers would list the directory, but a
repaired table has both.

    hints = decide(table.snapshots)                 # [Hint(name, now, wanted, why), ...]
    ensure(table.snapshots, write=ex.write_hint)    # decide, then write the stale ones; returns what it wrote

A directory without a file of its kind gets no hint (`wanted` None): there is nothing a hint could name.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Callable, Sequence

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.format.snapshot import format_hint, parse_hint
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.table import CHANGELOG_PREFIX, EARLIEST, LATEST, SNAPSHOT_PREFIX, SnapshotManager

HINT_NAMES = (LATEST, EARLIEST)
# write(path, value, reason): how a hint is written (the executor's records what it wrote; default: the file system)
HintWriter = Callable[[str, int, str], None]


@dataclass(frozen=True)
class Hint:
    """One hint file and what it must say."""

    directory: str          # snapshot/ or changelog/ of a branch
    kind: str               # "snapshot" | "changelog": what the directory holds
    name: str               # LATEST | EARLIEST
    now: int | None         # the id the file holds; None: missing or not an id
    text: str | None        # what the file holds when it is not an id (None: missing, or an id)
    wanted: int | None      # the id it must hold; None: no file of its kind exists (no hint to write)
    why: str                # why it must change, in a reader's words ('' when it is right)

    @property
    def path(self) -> str:
        return posixpath.join(self.directory, self.name)

    @property
    def stale(self) -> bool:
        return self.wanted is not None and self.now != self.wanted

    def to_dict(self) -> dict[str, object]:
        return {"hint": self.path, "name": self.name, "kind": self.kind, "current": self.now, "text": self.text,
                "wanted": self.wanted, "why": self.why}


def manager_of(io: FileIO, directory: str) -> SnapshotManager:
    """The manager of a branch's snapshot/ or changelog/ directory."""
    parent, sub = posixpath.split(posixpath.normpath(directory))
    return SnapshotManager(io, parent, sub, CHANGELOG_PREFIX if sub == "changelog" else SNAPSHOT_PREFIX)


def _span(ids: Sequence[int], kind: str) -> str:
    return f"{kind}-{ids[0]}" if len(ids) == 1 else f"{kind}-{ids[0]} … {kind}-{ids[-1]}"


def _read(mgr: SnapshotManager, name: str) -> tuple[int | None, str | None]:
    """(id, None), (None, text) for content that is not an id, or (None, None) when missing / not a file."""
    path = posixpath.join(mgr.dir, name)
    try:
        raw = mgr.io.read_bytes(path)
    except OSError:  # missing, a directory, unreadable: as readers see it, no hint
        return None, None
    value = parse_hint(raw, path)
    if value is not None and value > 0:
        return value, None
    return None, raw[:40].decode("utf-8", "replace")


def contiguous_start(ids: Sequence[int]) -> int:
    """The first id of the contiguous run of `ids` (sorted) that ends at the newest."""
    start = len(ids) - 1
    while start > 0 and ids[start - 1] == ids[start] - 1:
        start -= 1
    return ids[start]


def check_earliest(mgr: SnapshotManager, ids: Sequence[int], earliest: int, kind: str = "snapshot") -> None:
    """An EARLIEST given explicitly (Java's `repair_earliest_snapshot`): a snapshot that exists, from which every
    snapshot up to the latest exists, and which is the oldest one or follows a missing one (it skips only a gap,
    never live history). InvalidArgumentError otherwise."""
    if earliest not in set(ids):
        raise InvalidArgumentError(f"{mgr.path(earliest)} does not exist: the earliest {kind} must be one of "
                                   f"{_span(ids, kind)}")
    start = contiguous_start(ids)
    if earliest < start:
        gap = next(i for i in range(earliest, ids[-1]) if i not in set(ids))
        raise InvalidArgumentError(f"{kind} {earliest} cannot be the earliest: {kind}-{gap} between it and the "
                                   f"latest {kind}-{ids[-1]} is missing (the earliest must be {kind} {start} or later)")
    if earliest > start:
        raise InvalidArgumentError(f"{kind} {earliest} cannot be the earliest: {kind}-{earliest - 1} exists, and "
                                   f"{kind}s {start} … {earliest - 1} would be skipped by every reader (the earliest "
                                   f"must follow a missing {kind}: {start})")


def decide(mgr: SnapshotManager, *, kind: str | None = None, earliest: int | None = None,
           names: Sequence[str] = HINT_NAMES, ids: Sequence[int] | None = None) -> list[Hint]:
    """What each hint of `mgr`'s directory says now and must say (module docstring), from a listing now (or `ids`).
    `earliest`: the EARLIEST to write instead of the oldest file (validated: `check_earliest`)."""
    kind = kind or mgr.prefix.rstrip("-")
    ids = sorted(mgr.list_ids() if ids is None else ids)
    if earliest is not None and ids:
        check_earliest(mgr, ids, earliest, kind)
    have = set(ids)
    out = []
    for name in names:
        now, text = _read(mgr, name)
        if not ids:
            out.append(Hint(mgr.dir, kind, name, now, text, None, ""))
            continue
        newest, oldest = ids[-1], (earliest if earliest is not None else ids[0])
        wanted = newest if name == LATEST else oldest
        out.append(Hint(mgr.dir, kind, name, now, text, wanted, _why(name, now, text, wanted, ids, have, kind)))
    return out


def _why(name: str, now: int | None, text: str | None, wanted: int, ids: Sequence[int], have: set[int],
         kind: str) -> str:
    if now == wanted:
        return ""
    if now is None:
        return f"holds {text!r}, not a {kind} id" if text is not None else "is missing"
    live = f"the {kind}s are {_span(ids, kind)}"
    if name == LATEST:
        if now > ids[-1]:
            return (f"names {kind} {now}, beyond the newest {kind} file; {live}: Java resolves the latest {kind} "
                    f"to the missing {kind}-{now}")
        if now not in have:
            return (f"names {kind} {now}, which does not exist; {live}: Java 0.9 resolves the latest {kind} to it, "
                    f"so its reads and commits fail on the missing {kind}-{now}")
        return f"names {kind} {now}, but {kind} {ids[-1]} is the latest; readers fall back to listing"
    if now not in have:
        return (f"names {kind} {now}, which does not exist (an interrupted expiry); {live}: readers fall back to "
                "listing")
    if now > wanted:
        return (f"names {kind} {now}, but {kind}s {wanted} … {now - 1} exist: Java never reads or expires them; "
                f"{live}")
    return f"names {kind} {now}, below the earliest {kind} {wanted}; {live}"


def write(mgr: SnapshotManager, hint: Hint, write: HintWriter | None = None) -> None:
    """Write `hint.wanted` into its file (through `write` when given)."""
    assert hint.wanted is not None
    reason = f"{hint.name.lower()} {hint.kind} = {hint.wanted}"
    if write is not None:
        write(hint.path, hint.wanted, reason)
    else:
        mgr.io.write_bytes(hint.path, format_hint(hint.wanted))


def ensure(mgr: SnapshotManager, *, names: Sequence[str] = HINT_NAMES, earliest: int | None = None,
           write_hint: HintWriter | None = None) -> list[Hint]:
    """Decide the hints of `mgr`'s directory from a listing now and write every stale one; returns those written.
    Idempotent: a rerun after a crash converges to the same files."""
    stale = [h for h in decide(mgr, names=names, earliest=earliest) if h.stale]
    for h in stale:
        write(mgr, h, write_hint)
    return stale


__all__ = ["Hint", "HINT_NAMES", "HintWriter", "decide", "ensure", "write", "check_earliest", "contiguous_start", "manager_of"]
