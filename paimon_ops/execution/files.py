"""The files of a plan or report: `FileAction` (one file: path, kind, reason, size) and `FileList`, an immutable
sequence of them held column-wise.

A large expiry plans a million deletes; as a million `FileAction` objects, each with its own path string, that is
~300 B a file (the 1 M-file expiry peaked above Java's heap). `FileList` keeps one string per file (its
name), each directory, kind and reason once, and the sizes and indices in arrays: ~125 B a file. It is a
`Sequence[FileAction]` (indexing, iteration, slicing and equality with tuples work as before; each element is made
on access), and it answers the questions the hot paths ask without making the elements at all: the counts and bytes
by kind, the files grouped by directory, the paths one at a time."""
from __future__ import annotations

import collections.abc
from array import array
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence, overload

import numpy as np


@dataclass(frozen=True, slots=True)  # (slots: a report can still hold many of them)
class FileAction:
    path: str
    kind: str
    reason: str
    size: int | None = None


_NO_SIZE = -(2 ** 63)  # (a file whose size is not known: FileAction.size None)


class FileColumns:
    """Appends FileActions into columns (the builder of a FileList; PlanBuilder fills one per step)."""

    __slots__ = ("dirs", "dir_of", "names", "kinds", "kind_of", "reasons", "reason_of", "sizes", "_dir_ix",
                 "_kind_ix", "_reason_ix")

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self.dir_of = array("I")
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.kind_of = array("H")
        self.reasons: list[str] = []
        self.reason_of = array("I")
        self.sizes = array("q")
        self._dir_ix: dict[str, int] = {}
        self._kind_ix: dict[str, int] = {}
        self._reason_ix: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def append(self, a: FileAction) -> None:
        self.add(a.path, a.kind, a.reason, a.size)

    def add(self, path: str, kind: str, reason: str, size: int | None) -> None:
        if not isinstance(path, str):
            raise TypeError(f"a file's path must be a string, not {type(path).__name__}")
        cut = path.rfind("/") + 1  # (the directory keeps its '/': directory + name is the path, whatever it is)
        self.add_split(path[:cut], path[cut:], kind, reason, size)

    def add_split(self, d: str, name: str, kind: str, reason: str, size: int | None) -> None:
        """`add` of a path already split after its last '/' (directory with its '/', name)."""
        ix = self._dir_ix.get(d)
        if ix is None:
            ix = self._dir_ix[d] = len(self.dirs)
            self.dirs.append(d)
        self.dir_of.append(ix)
        self.names.append(name)
        k = self._kind_ix.get(kind)
        if k is None:
            k = self._kind_ix[kind] = len(self.kinds)
            self.kinds.append(kind)
        self.kind_of.append(k)
        r = self._reason_ix.get(reason)
        if r is None:
            r = self._reason_ix[reason] = len(self.reasons)
            self.reasons.append(reason)
        self.reason_of.append(r)
        self.sizes.append(_NO_SIZE if size is None else size)

    def extend(self, actions: Iterable[FileAction]) -> None:
        add = self.add
        for a in actions:
            add(a.path, a.kind, a.reason, a.size)

    def freeze(self) -> FileList:
        return FileList._of(self.dirs, self.dir_of, self.names, self.kinds, self.kind_of, self.reasons,
                            self.reason_of, self.sizes)


class FileList(collections.abc.Sequence):  # type: ignore[type-arg]
    """An immutable sequence of FileActions, held column-wise (see the module docstring)."""

    __slots__ = ("_dirs", "_dir_of", "_names", "_kinds", "_kind_of", "_reasons", "_reason_of", "_sizes")

    _dirs: list[str]
    _dir_of: array
    _names: list[str]
    _kinds: list[str]
    _kind_of: array
    _reasons: list[str]
    _reason_of: array
    _sizes: array

    def __new__(cls, actions: Iterable[FileAction] = ()) -> FileList:
        if isinstance(actions, FileList):
            return actions
        cols = FileColumns()
        cols.extend(actions)
        return cols.freeze()

    @classmethod
    def _of(cls, dirs: list[str], dir_of: array, names: list[str], kinds: list[str], kind_of: array,
            reasons: list[str], reason_of: array, sizes: array) -> FileList:
        self = object.__new__(cls)
        self._dirs, self._dir_of, self._names = dirs, dir_of, names
        self._kinds, self._kind_of, self._reasons, self._reason_of, self._sizes = kinds, kind_of, reasons, reason_of, sizes
        return self

    @staticmethod
    def concat(parts: Iterable[Sequence[FileAction]]) -> FileList:
        """One FileList of several (FileLists or any sequences of FileActions), in order."""
        lists = [FileList(p) for p in parts]
        lists = [x for x in lists if len(x)]
        if len(lists) == 1:
            return lists[0]
        cols = FileColumns()
        for x in lists:
            dir_map = [cols._dir_ix.setdefault(d, len(cols._dir_ix)) for d in x._dirs]
            kind_map = [cols._kind_ix.setdefault(k, len(cols._kind_ix)) for k in x._kinds]
            reason_map = [cols._reason_ix.setdefault(r, len(cols._reason_ix)) for r in x._reasons]
            cols.dir_of.frombytes(_mapped(x._dir_of, dir_map))
            cols.kind_of.frombytes(_mapped(x._kind_of, kind_map))
            cols.reason_of.frombytes(_mapped(x._reason_of, reason_map))
            cols.names += x._names
            cols.sizes += x._sizes
        cols.dirs[:] = list(cols._dir_ix)
        cols.kinds[:] = list(cols._kind_ix)
        cols.reasons[:] = list(cols._reason_ix)
        return cols.freeze()

    # ------------------------------------------------------------------ the Sequence protocol
    def __len__(self) -> int:
        return len(self._names)

    def _at(self, i: int) -> FileAction:
        size = self._sizes[i]
        return FileAction(self._dirs[self._dir_of[i]] + self._names[i], self._kinds[self._kind_of[i]],
                          self._reasons[self._reason_of[i]], None if size == _NO_SIZE else size)

    @overload
    def __getitem__(self, i: int) -> FileAction: ...

    @overload
    def __getitem__(self, i: slice) -> FileList: ...

    def __getitem__(self, i: int | slice) -> FileAction | FileList:
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        n = len(self._names)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("FileList index out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[FileAction]:
        dirs, names, kinds, reasons = self._dirs, self._names, self._kinds, self._reasons
        for d, name, k, r, size in zip(self._dir_of, names, self._kind_of, self._reason_of, self._sizes):
            yield FileAction(dirs[d] + name, kinds[k], reasons[r], None if size == _NO_SIZE else size)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileList):
            return len(self) == len(other) and self._names == other._names and\
                all(a == b for a, b in zip(self, other))
        if isinstance(other, (tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[FileAction]) -> FileList:
        return FileList.concat((self, other))

    def __radd__(self, other: Sequence[FileAction]) -> FileList:
        return FileList.concat((other, self))

    def __repr__(self) -> str:
        shown = ", ".join(repr(a) for a in self[:3])
        return f"FileList([{shown}{', …' if len(self) > 3 else ''}], {len(self)} file(s))"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FileList, (tuple(self),))

    # ------------------------------------------------------------------ column-wise views (no element made)
    def paths(self) -> Iterator[str]:
        dirs = self._dirs
        for d, name in zip(self._dir_of, self._names):
            yield dirs[d] + name

    @property
    def names(self) -> Sequence[str]:
        """The part of each path after its last '/' (read-only)."""
        return self._names

    def kind_counts(self) -> dict[str, int]:
        counts = collections.Counter(self._kind_of)
        return {self._kinds[k]: n for k, n in sorted(counts.items())}

    def kind_bytes(self) -> dict[str, int]:
        kind_of, sizes = _view(self._kind_of), _view(self._sizes)
        known = sizes != _NO_SIZE
        if not _sums_fit(sizes[known]):  # (Python's integers: no sum wraps around)
            exact: dict[int, int] = dict.fromkeys(np.unique(kind_of).tolist(), 0)
            for k, size in zip(kind_of[known].tolist(), sizes[known].tolist()):
                exact[k] += size
            return {self._kinds[k]: n for k, n in exact.items()}
        totals = np.zeros(len(self._kinds), dtype=np.int64)
        np.add.at(totals, kind_of[known], sizes[known])
        return {self._kinds[k]: int(totals[k]) for k in np.unique(kind_of).tolist()}

    def total_bytes(self) -> int:
        sizes = _view(self._sizes)
        known = sizes[sizes != _NO_SIZE]
        return int(known.sum()) if _sums_fit(known) else sum(known.tolist())

    def any_sized(self) -> bool:
        """Whether any file has a size other than 0 or unknown (`any(a.size for a in ...)`)."""
        return any(s != _NO_SIZE and s != 0 for s in self._sizes)

    def only_kinds(self, kinds: Iterable[str]) -> bool:
        allowed = set(kinds)
        return all(self._kinds[k] in allowed for k in set(self._kind_of))

    def take(self, indices: Iterable[int]) -> FileList:
        """The files at `indices`, in that order."""
        if isinstance(indices, range):
            ix = np.arange(indices.start, indices.stop, indices.step, dtype=np.int64)
        elif isinstance(indices, np.ndarray):
            ix = indices.astype(np.int64, copy=False)
        elif isinstance(indices, array):
            ix = _view(indices).astype(np.int64)
        else:
            ix = np.fromiter(indices, dtype=np.int64)
        names = self._names
        return FileList._of(self._dirs, _taken(self._dir_of, ix), list(map(names.__getitem__, ix.tolist())),
                            self._kinds, _taken(self._kind_of, ix), self._reasons, _taken(self._reason_of, ix),
                            _taken(self._sizes, ix))

    def where_kind(self, kinds: Iterable[str]) -> FileList:
        """The files of these kinds, in order."""
        wanted = {k for k, kind in enumerate(self._kinds) if kind in set(kinds)}
        if not wanted:
            return FileList(())
        kind_of = _view(self._kind_of)
        if set(np.unique(kind_of).tolist()) <= wanted:
            return self
        return self.take(np.flatnonzero(np.isin(kind_of, list(wanted))))

    def by_directory(self) -> Iterator[tuple[str, FileList]]:
        """(directory, its files) — the directory as `path.rpartition('/')[0]` gives it — in order of first
        appearance, order kept within a directory; the files of one group at a time are made, never all."""
        for d, ix in self.directory_indices():
            yield d, self if ix is None else self.take(ix)

    def directory_indices(self) -> list[tuple[str, array | None]]:
        """`by_directory`'s groups as (directory, positions in this list) — None: all of them, one directory."""
        if not self._dir_of:
            return []
        keys = [d[:-1] for d in self._dirs]  # ("" and "/" both give "", as rpartition does)
        key_of = [keys.index(k) for k in keys] if len(set(keys)) < len(keys) else list(range(len(keys)))
        group_of = np.asarray(key_of, dtype=np.int64)[_view(self._dir_of)]
        if (group_of == group_of[0]).all():  # (one directory: the usual case of a subset)
            return [(keys[int(group_of[0])], None)]
        order = np.argsort(group_of, kind="stable")  # (positions by group, in order within each)
        groups, first = np.unique(group_of, return_index=True)
        starts = np.searchsorted(group_of[order], groups)
        ends = np.append(starts[1:], len(order))
        out: list[tuple[str, array | None]] = []
        for g in np.argsort(first).tolist():  # (groups in order of first appearance)
            ix = array("I")
            ix.frombytes(order[starts[g]:ends[g]].astype(np.uint32).tobytes())
            out.append((keys[int(groups[g])], ix))
        return out

    def kind_iter(self) -> Iterator[str]:
        """The kind of each file, in order."""
        kinds = self._kinds
        return (kinds[k] for k in self._kind_of)

    def in_directory_order(self) -> FileList:
        """The same files grouped by directory (`by_directory`'s order): one copy, taken in that order. Only for
        phases whose order does not matter (DELETE_FILES): each directory is then opened and checked once."""
        groups = self.directory_indices()
        if len(groups) <= 1:
            return self
        order = array("I")
        for _, ix in groups:
            order.extend(range(len(self)) if ix is None else ix)
        return self.take(order)


def _sums_fit(sizes: np.ndarray) -> bool:
    """Whether any sum of these sizes fits in int64 (numpy's sums would wrap around silently)."""
    return not len(sizes) or int(np.abs(sizes).max()) <= (2 ** 63 - 1) // len(sizes)


def _view(col: array) -> np.ndarray:
    """A read-only numpy view of an array column (dropped by the caller before the column could grow)."""
    return np.frombuffer(col, dtype=col.typecode) if len(col) else np.zeros(0, dtype=col.typecode)


def _mapped(col: array, mapping: list[int]) -> bytes:
    """The column with every index i replaced by mapping[i], as the bytes of an array of its type."""
    if mapping == list(range(len(mapping))):
        return col.tobytes()
    return np.asarray(mapping, dtype=col.typecode)[_view(col)].tobytes()


def _taken(col: array, ix: np.ndarray) -> array:
    out = array(col.typecode)
    out.frombytes(_view(col)[ix].tobytes())
    return out


class FileParts:
    """The files an execution has done so far, in parts as the phases return them (never copied into one list until
    the report asks: `all()`)."""

    __slots__ = ("parts", "n")

    def __init__(self) -> None:
        self.parts: list[Sequence[FileAction]] = []
        self.n = 0

    def __iadd__(self, more: Sequence[FileAction]) -> FileParts:
        if len(more):
            self.parts.append(more)
            self.n += len(more)
        return self

    def __len__(self) -> int:
        return self.n

    def all(self) -> FileList:
        return FileList.concat(self.parts)

    def lists(self) -> list[FileList]:
        """The parts, each as a FileList (the FileLists given are not copied)."""
        return [FileList(p) for p in self.parts]

    def paths(self) -> Iterator[str]:
        for part in self.lists():
            yield from part.paths()
