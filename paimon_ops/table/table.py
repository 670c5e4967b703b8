"""A Paimon table on a file system: catalog, table, schema / snapshot / tag / consumer managers."""
from __future__ import annotations

import fnmatch
import logging
import posixpath
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping, Sequence

from paimon_ops.errors import (
    BranchNotFoundError,
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    TableNotFoundError,
    UnsafeOperationError,
)
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.snapshot import Consumer, Snapshot, Tag, format_hint, parse_hint
from paimon_ops.options import DATA_FILE_EXTERNAL_PATHS, Options
from paimon_ops.table.fileio import FaultHook, FileIO

log = logging.getLogger(__name__)

SNAPSHOT_PREFIX = "snapshot-"
TAG_PREFIX = "tag-"
SCHEMA_PREFIX = "schema-"
CHANGELOG_PREFIX = "changelog-"
CONSUMER_PREFIX = "consumer-"
BRANCH_PREFIX = "branch-"
EARLIEST = "EARLIEST"
LATEST = "LATEST"
_ID = re.compile(r"^\d+$")


def list_metadata_dir(io: FileIO, directory: str, prefix: str) -> list:
    """Entries of a metadata directory (snapshot/, tag/, changelog/, schema/), failing closed: the directory must be a
    directory when it exists (a file in its place hides every snapshot or tag: CorruptMetadataError), and an entry
    with the metadata prefix that is a symbolic link is refused (UnsafeOperationError) — silently skipping it would
    hide a snapshot or tag, and with it the protection of its files."""
    try:
        entries = io.list_status(directory, include_symlinks=True, strict=True)  # no extra request when listed
    except NotADirectoryError:
        raise CorruptMetadataError(directory, "is not a directory, so the table's history in it cannot be read")\
            from None
    for st in entries:
        if st.is_symlink and st.name.startswith(prefix):
            raise UnsafeOperationError(f"{st.path} is a symbolic link -> {st.link_target}; paimon-ops never follows "
                                       "links inside a table, and cannot ignore one that looks like table history")
    return [st for st in entries if not st.is_symlink]


def _ids_in(io: FileIO, directory: str, prefix: str) -> list[int]:
    out = []
    for st in list_metadata_dir(io, directory, prefix):
        if st.is_dir or not st.name.startswith(prefix):
            continue
        suffix = st.name[len(prefix):]
        if _ID.match(suffix):
            out.append(int(suffix))
    return sorted(out)


class SchemaManager:
    def __init__(self, io: FileIO, branch_root: str):
        self.io = io
        self.dir = posixpath.join(branch_root, "schema")
        self._cache: dict[int, TableSchema] = {}

    def path(self, schema_id: int) -> str:
        return posixpath.join(self.dir, f"{SCHEMA_PREFIX}{schema_id}")

    def list_ids(self) -> list[int]:
        return _ids_in(self.io, self.dir, SCHEMA_PREFIX)

    def schema(self, schema_id: int) -> TableSchema:
        if schema_id not in self._cache:
            p = self.path(schema_id)
            try:
                text = self.io.read_bytes(p)
            except FileNotFoundError:
                raise MissingFileError(p, "a snapshot or data file (schema id)") from None
            self._cache[schema_id] = TableSchema.from_json(text, p)
        return self._cache[schema_id]

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def commit(self, schema: TableSchema) -> bool:
        return self.io.write_atomic_if_absent(self.path(schema.id), schema.to_json().encode())


class SnapshotManager:
    """Snapshots of one branch (or long-lived changelogs, with prefix 'changelog-')."""

    def __init__(self, io: FileIO, branch_root: str, subdir: str = "snapshot", prefix: str = SNAPSHOT_PREFIX,
                 latest_loader: Callable[[], Snapshot | None] | None = None):
        self.io = io
        self.dir = posixpath.join(branch_root, subdir)
        self.prefix = prefix
        # A catalog that owns the table's history (REST) says which snapshot is the latest; None: the files say.
        self.latest_loader = latest_loader

    def path(self, snapshot_id: int) -> str:
        return posixpath.join(self.dir, f"{self.prefix}{snapshot_id}")

    def exists(self, snapshot_id: int) -> bool:
        return self.io.exists(self.path(snapshot_id))

    def snapshot(self, snapshot_id: int) -> Snapshot:
        p = self.path(snapshot_id)
        try:
            text = self.io.read_bytes(p)
        except FileNotFoundError:
            raise MissingFileError(p) from None
        return Snapshot.from_json(text, p)

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot, or None if its file does not exist. Corrupt files still raise."""
        try:
            return self.snapshot(snapshot_id)
        except MissingFileError:
            return None

    def list_ids(self) -> list[int]:
        return _ids_in(self.io, self.dir, self.prefix)

    def _hint(self, name: str) -> int | None:
        """The hint's id, or None when it is missing or unreadable (a directory, a permission problem...):
        hints are advisory and every caller falls back to listing the directory (format.md §3.3)."""
        path = posixpath.join(self.dir, name)
        try:
            return parse_hint(self.io.read_bytes(path), path)
        except OSError as e:  # FileNotFoundError included
            if not isinstance(e, FileNotFoundError):
                log.warning("ignoring unreadable hint %s: %s", path, e)
            return None

    def latest_id(self) -> int | None:
        """The latest snapshot's id: the catalog's when it owns the history, else from the files."""
        if self.latest_loader is not None:
            s = self.latest_loader()
            return s.id if s is not None else None
        return self.latest_id_from_files()

    def latest_id_from_files(self) -> int | None:
        """Hint first, verified: trusted only if positive and its successor does not exist (format.md §3.3)."""
        hint = self._hint(LATEST)
        if hint is not None and hint > 0 and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        """Hint first, verified: trusted only if that snapshot exists and its predecessor does not.

        Java trusts an existing hint even when older snapshots survive (a stale hint ahead of the real
        earliest); expiry and orphan cleanup must not ignore those older snapshots, so we check one more id.
        """
        hint = self._hint(EARLIEST)
        if hint is not None and hint > 0 and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def latest(self) -> Snapshot | None:
        if self.latest_loader is not None:
            return self.latest_loader()
        return self.latest_from_files()

    def latest_from_files(self) -> Snapshot | None:
        i = self.latest_id_from_files()
        return self.snapshot(i) if i is not None else None

    def earliest(self) -> Snapshot | None:
        i = self.earliest_id()
        return self.snapshot(i) if i is not None else None

    def commit(self, snapshot: Snapshot, tmp_token: str | None = None) -> bool:
        """Atomically create snapshot-<id>; False if another writer took the id."""
        return self.io.write_atomic_if_absent(self.path(snapshot.id), snapshot.to_json().encode(), tmp_token)

    def write_hint(self, name: str, snapshot_id: int) -> None:
        self.io.write_bytes(posixpath.join(self.dir, name), format_hint(snapshot_id))

    def write_latest_hint(self, snapshot_id: int) -> None:
        try:
            self.write_hint(LATEST, snapshot_id)
        except OSError as e:  # a hint is advisory; readers verify it (format.md §3.3)
            log.warning("could not write %s hint %s: %s", LATEST, snapshot_id, e)

    def iter_snapshots(self) -> Iterator[Snapshot]:
        for i in self.list_ids():
            s = self.try_snapshot(i)
            if s is not None:
                yield s


def validate_tag_name(name: str, allow_numeric: bool = False) -> str:
    """Tag names become file names: refuse anything that could escape tag/ or confuse snapshot ids.

    `allow_numeric` is only for automatic tags whose name is the period name the table's own formatter produces
    (Paimon's `without_dashes` daily names such as 20261121): Java creates and expires those by that name."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError("tag name must not be empty or blank")
    if name != name.strip():
        raise InvalidArgumentError(f"tag name {name!r} must not start or end with whitespace")
    if _ID.match(name) and not allow_numeric:
        raise InvalidArgumentError(
            f"tag name {name!r} is numeric; it would be ambiguous with snapshot ids in 'VERSION AS OF'"
        )
    if "/" in name or "\\" in name or name in (".", "..") or ".." in name:
        raise InvalidArgumentError(f"tag name {name!r} must not contain '/', '\\' or '..'")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidArgumentError(f"tag name {name!r} must not contain control characters")
    return name


class TagManager:
    def __init__(self, io: FileIO, branch_root: str):
        self.io = io
        self.dir = posixpath.join(branch_root, "tag")

    def path(self, name: str) -> str:
        return posixpath.join(self.dir, f"{TAG_PREFIX}{name}")

    def exists(self, name: str) -> bool:
        return self.io.is_file(self.path(name))

    def tag(self, name: str) -> Tag:
        p = self.path(name)
        try:
            text = self.io.read_bytes(p)
        except FileNotFoundError:
            raise InvalidArgumentError(f"tag {name!r} does not exist ({p})") from None
        return Tag.from_json(text, p)

    def names(self) -> list[str]:
        # Only regular files are tags: `tag-success-file/` is a directory with the same prefix.
        return sorted(st.name[len(TAG_PREFIX):] for st in list_metadata_dir(self.io, self.dir, TAG_PREFIX)
                      if not st.is_dir and st.name.startswith(TAG_PREFIX))

    def tags(self) -> list[tuple[str, Tag]]:
        """All tags sorted by (snapshot id, name); any unreadable tag raises (callers fail closed)."""
        out = [(n, self.tag(n)) for n in self.names()]
        out.sort(key=lambda nt: (nt[1].id, nt[0]))
        return out

    def mtime_millis(self, name: str) -> int:
        for st in self.io.list_status(self.dir):
            if st.name == f"{TAG_PREFIX}{name}":
                return st.mtime_millis
        return 0

    def write(self, name: str, tag: Tag) -> None:
        validate_tag_name(name)
        self.io.write_bytes(self.path(name), tag.to_json().encode())

    def delete_file(self, name: str) -> bool:
        return self.io.delete_file(self.path(name))


def validate_consumer_id(consumer_id: object) -> str:
    """A consumer id becomes a file name (`consumer/consumer-<id>`): a plain name only."""
    if not isinstance(consumer_id, str) or not consumer_id.strip():
        raise InvalidArgumentError("consumer id must not be empty or blank")
    if "/" in consumer_id or "\\" in consumer_id or consumer_id in (".", "..") or ".." in consumer_id:
        raise InvalidArgumentError(f"consumer id {consumer_id!r} must be a plain name: no '/', '\\' or '..'")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in consumer_id):
        raise InvalidArgumentError(f"consumer id {consumer_id!r} must not contain control characters")
    return consumer_id


class ConsumerManager:
    """Consumers of one branch: `consumer/consumer-<id>` holding `{"nextSnapshot": n}` (maintenance.md §2.6)."""

    def __init__(self, io: FileIO, branch_root: str):
        self.io = io
        self.dir = posixpath.join(branch_root, "consumer")

    def path(self, consumer_id: str) -> str:
        return posixpath.join(self.dir, f"{CONSUMER_PREFIX}{consumer_id}")

    def consumers(self) -> dict[str, tuple[Consumer, int]]:
        """consumer id -> (consumer, file mtime millis). Fails closed: a consumer file that cannot be read raises
        (CorruptMetadataError), a symbolic link named like one is refused — a consumer pins snapshots, so an unread
        one could let expiry delete what a reader still needs."""
        out = {}
        for st in list_metadata_dir(self.io, self.dir, CONSUMER_PREFIX):
            if st.is_dir or not st.name.startswith(CONSUMER_PREFIX):
                continue
            try:
                data = self.io.read_bytes(st.path)
            except FileNotFoundError:
                continue  # removed while listed (a reset or expiry elsewhere)
            out[st.name[len(CONSUMER_PREFIX):]] = (Consumer.from_json(data, st.path), st.mtime_millis)
        return out

    def consumer(self, consumer_id: str) -> Consumer | None:
        p = self.path(consumer_id)
        try:
            return Consumer.from_json(self.io.read_bytes(p), p)
        except FileNotFoundError:
            return None


BRANCH_SPLITTER = "$"        # Paimon's identifier: `db.table$branch_<name>` names a branch of db.table
BRANCH_MARK = "branch_"
MAIN_BRANCH = "main"
BRANCH_NAME_MAX = 200


def validate_branch_name(name: object, what: str = "branch name") -> str:
    """A branch name becomes a directory name (`branch/branch-<name>`) and part of Paimon's identifier
    (`table$branch_<name>`): refuse anything that is not a plain name — empty or blank, `main`, all digits (Java's
    rules), a path separator, `.`/`..`, `$` (it would split the identifier), whitespace at either end, control
    characters, more than 200 characters."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"{what} must not be empty or blank")
    if name == MAIN_BRANCH:
        raise InvalidArgumentError(f"{what} {name!r} is the main branch (the table itself), not a branch")
    if name != name.strip():
        raise InvalidArgumentError(f"{what} {name!r} must not start or end with whitespace")
    if _ID.match(name):
        raise InvalidArgumentError(f"{what} {name!r} is all digits, which Paimon does not allow")
    if "/" in name or "\\" in name or name in (".", "..") or ".." in name:
        raise InvalidArgumentError(f"{what} {name!r} must be a plain name: no '/', '\\' or '..'")
    if BRANCH_SPLITTER in name:
        raise InvalidArgumentError(f"{what} {name!r} must not contain '$' (it separates the branch in "
                                   "'db.table$branch_<name>')")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidArgumentError(f"{what} {name!r} must not contain control characters")
    if len(name) > BRANCH_NAME_MAX:
        raise InvalidArgumentError(f"{what} {name[:20]!r}… is longer than {BRANCH_NAME_MAX} characters")
    return name


@dataclass(frozen=True)
class Identifier:
    """`database.table`, or `database.table$branch_<name>` for a branch (Paimon's identifier). The one parser of
    table names: the CLI, the facade, Dagster and Airflow all name tables through it."""

    database: str
    table: str
    branch: str = MAIN_BRANCH

    @staticmethod
    def parse(text: str) -> Identifier:
        if not isinstance(text, str):
            raise InvalidArgumentError(f"table identifier {text!r} must be text like 'database.table'")
        name, sep, suffix = text.partition(BRANCH_SPLITTER)
        parts = name.split(".")
        if len(parts) != 2 or not all(parts):
            raise InvalidArgumentError(f"table identifier {text!r} must look like 'database.table' "
                                       "(or 'database.table$branch_<name>' for a branch)")
        if not sep:
            return Identifier(parts[0], parts[1])
        if not suffix.startswith(BRANCH_MARK) or BRANCH_SPLITTER in suffix:
            raise InvalidArgumentError(
                f"table identifier {text!r}: after '$' comes a branch as 'branch_<name>' "
                f"({name}$branch_<name>); system tables such as {name}$snapshots are not tables to maintain")
        branch = suffix[len(BRANCH_MARK):]
        if branch == MAIN_BRANCH:
            return Identifier(parts[0], parts[1])
        validate_branch_name(branch, f"table identifier {text!r}: branch name")
        return Identifier(parts[0], parts[1], branch)

    @property
    def table_name(self) -> str:
        """`database.table` (without the branch)."""
        return f"{self.database}.{self.table}"

    def on_branch(self, branch: str) -> Identifier:
        return Identifier(self.database, self.table, branch)

    def asked_for(self, branch: str | None) -> Identifier:
        """This identifier on `branch` when a caller names one beside it (`get_table(ident, branch=…)`): a branch
        given both ways must agree, and a branch other than main must be a plain name."""
        if branch is None or branch == self.branch:
            return self
        if self.branch != MAIN_BRANCH:
            raise InvalidArgumentError(f"{self} names branch {self.branch!r}, but branch {branch!r} was asked "
                                       "for as well")
        if branch != MAIN_BRANCH:
            validate_branch_name(branch)
        return self.on_branch(branch)

    def __str__(self) -> str:
        return self.table_name + ("" if self.branch == MAIN_BRANCH else f"{BRANCH_SPLITTER}{BRANCH_MARK}{self.branch}")


def full_name(table_name: str, branch: str) -> str:
    """`db.table`, or `db.table$branch_<name>` for another branch than main."""
    return table_name if branch == MAIN_BRANCH else f"{table_name}{BRANCH_SPLITTER}{BRANCH_MARK}{branch}"


class FileStoreTable:
    """One Paimon table (one branch of it). Cheap to construct; reads metadata lazily.

    `catalog`: the `paimon_ops.catalog.Catalog` it was opened through, which every snapshot and schema commit goes
    through (its lock, metastore partitions, a server owning the history); None — opened by its location alone —
    means its files are the whole truth (create-if-absent commits, as the filesystem catalog makes them)."""

    def __init__(self, location: str, identifier: str | None = None, branch: str = "main",
                 options_override: Mapping[str, str] | None = None, fault_hook: FaultHook | None = None,
                 io: FileIO | None = None, catalog: Any = None):
        if io is None:
            io, root = FileIO.resolve(location, fault_hook, dict(options_override) if options_override else None)
        else:
            root = location
        self.io = io
        self.root = root
        self.location = io.uri(root)
        self.identifier = identifier or posixpath.basename(root)
        self.branch = branch
        self.branch_root = self.branch_path(branch)
        self.options_override = dict(options_override or {})
        self.catalog = catalog
        self.schemas = SchemaManager(io, self.branch_root)
        self.snapshots = SnapshotManager(io, self.branch_root, latest_loader=self._catalog_latest()
                                         if catalog is not None and catalog.supports_version_management else None)
        self.changelogs = SnapshotManager(io, self.branch_root, "changelog", CHANGELOG_PREFIX)
        self.tags = TagManager(io, self.branch_root)
        self.consumers = ConsumerManager(io, self.branch_root)
        if not io.is_dir(posixpath.join(self.branch_root, "schema")):
            if branch != MAIN_BRANCH and io.is_dir(posixpath.join(root, "schema")):
                if io.is_dir(self.branch_root):
                    raise TableNotFoundError(self.full_name, self.location, f"branch {branch!r} has no schema/ "
                                             "directory (an interrupted create or delete: delete-branch finishes it)")
                known = self.for_branch(MAIN_BRANCH).branches()
                raise BranchNotFoundError(self.full_name, self.location, branch, known)
            raise TableNotFoundError(self.identifier, self.location, "no schema/ directory (is this a Paimon table?)")

    @property
    def full_name(self) -> str:
        """The identifier with the branch, as Paimon spells it: `db.t`, or `db.t$branch_b`."""
        return full_name(self.identifier, self.branch)

    def branch_path(self, branch: str) -> str:
        """Where a branch's metadata lives (`<root>/branch/branch-<name>`; the table root for main)."""
        return self.root if branch == MAIN_BRANCH else posixpath.join(self.root, "branch", f"{BRANCH_PREFIX}{branch}")

    def _catalog_latest(self) -> Callable[[], Snapshot | None]:
        return lambda: self.catalog.latest_snapshot(self)

    @classmethod
    def open(cls, location: str, **kw) -> FileStoreTable:
        return cls(location, **kw)

    def with_fault_hook(self, hook: FaultHook | None) -> FileStoreTable:
        return FileStoreTable(self.root, self.identifier, self.branch, self.options_override,
                              io=self.io.with_fault_hook(hook), catalog=self.catalog)

    def for_branch(self, branch: str) -> FileStoreTable:
        return FileStoreTable(self.root, self.identifier, branch, self.options_override, io=self.io,
                              catalog=self.catalog)

    @cached_property
    def schema(self) -> TableSchema:
        s = self.schemas.latest()
        if s is None:
            raise TableNotFoundError(self.identifier, self.location, "schema/ holds no schema file")
        return s

    def refresh(self) -> FileStoreTable:
        return FileStoreTable(self.root, self.identifier, self.branch, self.options_override, io=self.io,
                              catalog=self.catalog)

    @cached_property
    def options(self) -> Options:
        """The schema's options with the overrides: made once, like the schema they are read from."""
        merged = dict(self.schema.options)
        merged.update(self.options_override)
        return Options(merged, where=f"table {self.identifier}")

    @property
    def is_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    @property
    def is_bucket_unaware(self) -> bool:
        """An append table with `bucket = -1` (Paimon's BUCKET_UNAWARE mode): its deletion-vector index files are keyed
        by file name and roll at deletion-vector.index-file.target-size. Every other table keeps its DV and hash
        index files by (partition, bucket): one file of each per bucket (format.md §4.6, §8.3)."""
        return not self.is_primary_key and self.options.bucket == -1

    # ------------------------------------------------------------------ paths
    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    @property
    def manifest_dir(self) -> str:
        return self.path("manifest")

    @property
    def index_dir(self) -> str:
        return self.path("index")

    @property
    def statistics_dir(self) -> str:
        return self.path("statistics")

    def manifest_path(self, name: str) -> str:
        return posixpath.join(self.manifest_dir, name)

    @property
    def external_paths(self) -> list[str]:
        """`data-file.external-paths` entries (where Paimon >= 1.1 may place data files)."""
        return list(self.options.get(DATA_FILE_EXTERNAL_PATHS))

    @property
    def data_root(self) -> str:
        sub = self.options.data_path_directory
        return self.path(sub) if sub else self.root

    def branches(self) -> list[str]:
        """The table's branches besides main (directories `branch/branch-<name>`, as Java lists them)."""
        return _branch_dirs(self.io, self.root)

    def branch_exists(self, branch: str) -> bool:
        return branch == MAIN_BRANCH or self.io.is_dir(self.branch_path(branch))

    def branch_holds_history(self, branch: str) -> bool:
        """Whether a branch directory holds any snapshot, tag or long-lived changelog file (a directory without
        schema/ and without history is what an interrupted create or delete leaves: it keeps nothing alive)."""
        root = self.branch_path(branch)
        return any(not st.is_dir and st.name.startswith(prefix)
                   for sub, prefix in (("snapshot", SNAPSHOT_PREFIX), ("tag", TAG_PREFIX),
                                       ("changelog", CHANGELOG_PREFIX))
                   for st in list_metadata_dir(self.io, posixpath.join(root, sub), prefix))

    def __repr__(self) -> str:
        return f"Table({self.identifier!r} at {self.location!r}, branch={self.branch!r})"


def match_identifiers(tables: Sequence[str], pattern: str, exclude: Sequence[str],
                      branches_of: Callable[[str], list[str]]) -> list[str]:
    """Identifiers matching a table pattern (fnmatch), sorted — the one meaning of table patterns, for every
    catalog. Without '$' a pattern matches tables (their main branch): `db.*`, `*.*`, `shop.ord*`.
    `TABLES$branch_BRANCHES` matches the branches (never main) whose name matches BRANCHES of the tables matching
    TABLES: `db.t$branch_wap`, `db.*$branch_wap` (every table of db that has a branch wap), `*.*$branch_*` (every
    branch of every table). `exclude` patterns are matched against the whole identifier (`db.t` excludes main of db.t
    only, `db.t$branch_*` its branches). `branches_of(table)`: the table's branches."""
    tables_part, sep, suffix = pattern.partition(BRANCH_SPLITTER)
    if sep and (not suffix.startswith(BRANCH_MARK) or not suffix[len(BRANCH_MARK):]):
        raise InvalidArgumentError(f"table pattern {pattern!r}: after '$' comes 'branch_<name or pattern>', "
                                   f"e.g. {tables_part}$branch_wap or {tables_part}$branch_*")
    chosen = [t for t in tables if fnmatch.fnmatchcase(t, tables_part)]
    if not sep:
        found = chosen
    else:
        branch_pattern = suffix[len(BRANCH_MARK):]
        found = [full_name(t, b) for t in chosen for b in branches_of(t) if fnmatch.fnmatchcase(b, branch_pattern)]
    return sorted(x for x in found if not any(fnmatch.fnmatchcase(x, e) for e in exclude))


def branch_names(io: FileIO, table_root: str) -> list[str]:
    """The branches of the table at `table_root` (directories `branch/branch-<name>`, as Java lists them)."""
    return _branch_dirs(io, table_root)


def _branch_dirs(io: FileIO, table_root: str) -> list[str]:
    return sorted(st.name[len(BRANCH_PREFIX):] for st in io.list_status(posixpath.join(table_root, "branch"))
                  if st.is_dir and st.name.startswith(BRANCH_PREFIX))


class FileSystemCatalog:
    """Filesystem catalog: `<warehouse>/<db>.db/<table>`."""

    def __init__(self, warehouse: str, fault_hook: FaultHook | None = None, options: Mapping[str, str] | None = None):
        """`options`: warehouse options, e.g. the object-store settings s3.endpoint / s3.access-key / ..."""
        self.io, self.root = FileIO.resolve(warehouse, fault_hook, options)
        self.warehouse = warehouse
        # (an object-store warehouse without tables is an empty prefix: nothing to check beyond the probe)
        if self.io.has_directories and not self.io.is_dir(self.root):
            raise TableNotFoundError("*", warehouse, "the warehouse directory does not exist")
        if not self.io.has_directories:
            self.io.is_dir(self.root)  # first request: credentials check and connection probe

    def databases(self) -> list[str]:
        return sorted(st.name[:-3] for st in self.io.list_status(self.root) if st.is_dir and st.name.endswith(".db"))

    def tables(self, database: str) -> list[str]:
        db_dir = posixpath.join(self.root, f"{database}.db")
        return sorted(st.name for st in self.io.list_status(db_dir)
                      if st.is_dir and self.io.is_dir(posixpath.join(st.path, "schema")))

    def table_path(self, identifier: str | Identifier) -> str:
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        return posixpath.join(self.root, f"{ident.database}.db", ident.table)

    def get_table(self, identifier: str | Identifier, branch: str | None = None, **kw) -> FileStoreTable:
        """The table (`db.t`), or one of its branches (`db.t$branch_b`, or `branch=`); an unknown branch raises
        BranchNotFoundError naming the branches there are."""
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        ident = ident.asked_for(branch)
        path = self.table_path(ident)
        if not self.io.is_dir(path):
            known = ", ".join(f"{d}.{t}" for d in self.databases() for t in self.tables(d)) or "none"
            raise TableNotFoundError(str(ident), self.io.uri(path), f"tables in this warehouse: {known}")
        return FileStoreTable(path, identifier=ident.table_name, branch=ident.branch, io=self.io, **kw)

    def matching(self, pattern: str, exclude: Sequence[str] = ()) -> list[str]:
        """Identifiers matching a table pattern (`match_identifiers`)."""
        return match_identifiers(self.all_tables(), pattern, exclude,
                                 lambda t: _branch_dirs(self.io, self.table_path(t)))

    def all_tables(self) -> list[str]:
        return [f"{d}.{t}" for d in self.databases() for t in self.tables(d)]


__all__ = ["FileSystemCatalog", "FileStoreTable", "Identifier", "validate_branch_name", "full_name", "MAIN_BRANCH",
           "match_identifiers", "branch_names",
           "SnapshotManager", "TagManager", "SchemaManager", "ConsumerManager", "validate_tag_name",
           "validate_consumer_id", "CorruptMetadataError"]
