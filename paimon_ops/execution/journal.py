"""Run journals: what a crash can leave behind is only unreferenced files, and a rerun reclaims them.

An execution that removes snapshots or tags and then their files, or that writes files before committing them
(compaction, the commit's manifests), first records in `<table>/.paimon-ops/journal-<uuid>` (gzip JSON, without a
`.gz` extension, which pyarrow would take as a compression to undo on its own):

* `deletes`: the content files it will delete once their owners are gone (snapshot expiry and tag deletion remove
  the snapshot / tag files first, so that nothing stays listed whose files are partly deleted);
* `writes`: `(directory, token)` pairs — every file the run writes there carries the token (a UUID) in its name.

The journal is deleted when the run ends cleanly (a failed run cleans up after itself first), and with it the
`.paimon-ops` directory when the run created it and nothing else is in it: a run that is refused, or that changes
nothing, leaves the table's directory tree exactly as it found it. A journal left by a run
that died — killed, or abandoned after an error it could not clean up — is finished by the next expiry, tag deletion,
orphan removal or compaction of the table (`plan_pending`): its files that nothing keeps alive now are deleted (the
plan lists them, kind `leftover`), then the journal. A journal of a run still in progress is left alone: same host
and its process alive, or another host and younger than a day.

Java Paimon and pypaimon ignore the directory; nothing in it is ever a table file.
"""
from __future__ import annotations

import gzip
import itertools
import json
import logging
import os
import posixpath
import socket
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from paimon_ops.errors import CorruptMetadataError, FormatError, PaimonOpsError
from paimon_ops.execution.deleter import Layout, bad_name
from paimon_ops.execution.files import FileAction, FileList, FileParts
from paimon_ops.execution.model import DELETE_FILES, JOURNAL, LEFTOVER
from paimon_ops.execution.planning import PlanBuilder
from paimon_ops.table.references import kept_names
from paimon_ops.table.removal import remove_written
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)

JOURNAL_DIR = ".paimon-ops"
FORMAT = "paimon-ops-journal/1"
FOREIGN_HOST_AGE_MS = 86_400_000  # a journal of another host's run counts as dead after a day


def journal_dir(table: FileStoreTable) -> str:
    return posixpath.join(table.root, JOURNAL_DIR)


def _proc_start(pid: int) -> str | None:
    """The process' start time in clock ticks since boot (Linux), to tell a live process from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
        return data[data.rindex(")") + 2:].split()[19]
    except (OSError, ValueError, IndexError):
        return None


def _alive(d: dict[str, Any], mtime_ms: int, now_ms: int) -> bool:
    if d.get("abandoned"):
        return False
    if d.get("host") != socket.gethostname():
        return now_ms - mtime_ms < FOREIGN_HOST_AGE_MS
    pid = d.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    start = _proc_start(pid)
    return start is None or d.get("pid_start") in (None, start)


@dataclass
class Journal:
    """The journal of one running execution (see the module docstring)."""

    table: FileStoreTable
    operation: str
    path: str = ""
    deletes: Sequence[str] | FileList | FileParts = ()  # (FileList, FileParts: the paths are made while they are
                                                        # written, a chunk at a time)
    writes: list[dict[str, str]] = field(default_factory=list)
    abandoned: bool = False
    created_dir: bool = False  # this run created the journal directory (it removes it again when it ends cleanly)

    def _payload(self) -> bytes:
        """The gzip JSON, encoded and compressed in chunks: a journal may list a million paths, which must not be
        held as one list, one string and one byte string at once."""
        head = {"format": FORMAT, "operation": self.operation, "table": self.table.identifier,
                "started": int(time.time() * 1000), "host": socket.gethostname(), "pid": os.getpid(),
                "pid_start": _proc_start(os.getpid()), "abandoned": self.abandoned, "writes": self.writes}
        z = zlib.compressobj(1, zlib.DEFLATED, 31)  # (wbits 31: a gzip member)
        out = [z.compress(json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"deletes":[')]
        paths = self.deletes.paths() if isinstance(self.deletes, (FileList, FileParts)) else iter(self.deletes)
        sep = b""
        while chunk := list(itertools.islice(paths, 10_000)):
            out.append(z.compress(sep + json.dumps(chunk, separators=(",", ":"))[1:-1].encode()))
            sep = b","
        out.append(z.compress(b"]}"))
        out.append(z.flush())
        return b"".join(out)

    def save(self) -> None:
        io = self.table.io
        if not self.path:
            self.path = posixpath.join(journal_dir(self.table), f"journal-{uuid.uuid4()}")
            self.created_dir = io.has_directories and not io.exists(journal_dir(self.table))
        payload = self._payload()
        try:
            io.write_bytes(self.path, payload)
        except FileNotFoundError:  # another run removed the emptied directory between our mkdir and our write
            io.write_bytes(self.path, payload)

    def add_writes(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Record, before writing, that files named with `token` will appear in `directory`."""
        new = [{"dir": d, "token": t} for d, t in pairs]
        if new:
            self.writes += new
            self.save()

    def close(self) -> None:
        """The run ended cleanly (committed, or cleaned up after itself): nothing left to finish."""
        if self.path:
            if remove_written(self.table, [self.path], "journal")[1]:  # (the one deletion path; never raises)
                self.abandon()  # left behind: the next run (even in this process) finishes and removes it
            elif self.created_dir:
                try:  # only when empty: a journal of a concurrent run keeps it (removed, it is made again)
                    self.table.io.delete_dir_if_empty(journal_dir(self.table))
                except (OSError, PaimonOpsError) as e:
                    log.warning("could not remove the empty %s: %s", journal_dir(self.table), e)

    def abandon(self) -> None:
        """The run failed without cleaning up everything: let the next run finish it at once."""
        if self.path:
            self.abandoned = True
            try:
                self.save()
            except (OSError, PaimonOpsError) as e:
                log.warning("could not mark journal %s abandoned: %s", self.path, e)


def start(table: FileStoreTable, operation: str, deletes: Sequence[str] | FileList | FileParts = (),
          writes: Sequence[tuple[str, str]] = ()) -> Journal:
    """A journal of the files `deletes` names (paths, or the paths of a FileList or FileParts) and of the writes
    announced."""
    j = Journal(table, operation, deletes=deletes if isinstance(deletes, (FileList, FileParts)) else list(deletes),
                writes=[{"dir": d, "token": t} for d, t in writes])
    j.save()
    return j


@dataclass
class Pending:
    path: str
    operation: str
    deletes: list[str]
    writes: list[dict[str, str]]


def pending(table: FileStoreTable, now_ms: int | None = None) -> tuple[list[Pending], list[str]]:
    """(journals of runs that died, warnings). An unreadable journal is reported and left alone."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    d = journal_dir(table)
    out: list[Pending] = []
    warnings: list[str] = []
    try:
        entries = table.io.list_status(d)
    except (OSError, PaimonOpsError) as e:
        return [], [f"cannot list {d} ({e}); interrupted runs are not finished"]
    for st in entries:
        if st.is_dir or not st.name.startswith("journal-"):
            continue
        try:
            data = json.loads(gzip.decompress(table.io.read_bytes(st.path)))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise FormatError("not a paimon-ops journal")
            deletes = [p for p in data.get("deletes") or [] if isinstance(p, str)]
            writes = [w for w in data.get("writes") or []
                      if isinstance(w, dict) and isinstance(w.get("dir"), str) and isinstance(w.get("token"), str)
                      and len(w["token"]) >= 32]
        except FileNotFoundError:
            continue  # finished meanwhile
        except (OSError, ValueError, EOFError) as e:
            warnings.append(f"journal {st.path} is unreadable ({e}); left alone")
            continue
        if _alive(data, st.mtime_millis, now_ms):
            continue
        out.append(Pending(st.path, str(data.get("operation")), deletes, writes))
    return out, warnings


def plan_pending(b: PlanBuilder, table: FileStoreTable, now_ms: int | None = None) -> int:
    """Steps finishing the runs that died: their files that nothing keeps alive now (the current owners are read), then
    their journals. Returns how many journals are finished. Nothing is read when there is no journal."""
    journals, warnings = pending(table, now_ms)
    for warning in warnings:
        b.warn(warning)
    if not journals:
        return 0
    try:
        kept = kept_names(table).names
    except CorruptMetadataError as e:
        b.warn(f"{len(journals)} interrupted run(s) not finished: {e}")
        return 0
    layout = Layout(table)
    files: list[FileAction] = []
    seen: set[str] = set()
    for j in journals:
        why = f"left by an interrupted {j.operation} (journal {posixpath.basename(j.path)})"
        paths = list(j.deletes)
        for w in j.writes:
            if layout.where_problem(LEFTOVER, posixpath.normpath(w["dir"])):
                b.warn(f"journal {j.path}: {w['dir']} is not a directory of the table's files; ignored")
                continue
            try:
                listed = table.io.list_status(w["dir"])
            except (OSError, PaimonOpsError) as e:
                b.warn(f"journal {j.path}: cannot list {w['dir']} ({e}); its files are kept")
                continue
            paths += [st.path for st in listed if not st.is_dir and w["token"] in st.name]
        for p in paths:
            p = posixpath.normpath(p)
            d, name = posixpath.split(p)
            if p in seen or name in kept:
                continue
            problem = bad_name(name) or layout.leftover_problem(d, name)
            if problem:
                b.warn(f"journal {j.path} names {p}: {problem}; ignored")
                continue
            seen.add(p)
            files.append(FileAction(p, LEFTOVER, why))
    b.step("files left by interrupted runs", DELETE_FILES).add_all(files)
    b.step("journals of interrupted runs", DELETE_FILES).add_all(
        FileAction(j.path, JOURNAL, f"interrupted {j.operation} finished") for j in journals)
    return len(journals)


__all__ = ["Journal", "Pending", "start", "pending", "plan_pending", "journal_dir", "JOURNAL_DIR"]
