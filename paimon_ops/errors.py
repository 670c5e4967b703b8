"""The one small error hierarchy of paimon-ops.

Every message says what is wrong, where (table, file or option) and, where it helps, what to do.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib.util
from typing import Iterator


class PaimonOpsError(Exception):
    """Base class of every error raised on purpose by paimon-ops."""


class TableNotFoundError(PaimonOpsError):
    """No table of that name at that location (the message names both, and how to list the tables)."""

    def __init__(self, identifier: str, location: str, hint: str = "") -> None:
        self.identifier = identifier
        self.location = location
        msg = f"table {identifier!r} not found at {location}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class BranchNotFoundError(TableNotFoundError):
    """The table exists, the branch named does not."""

    def __init__(self, identifier: str, location: str, branch: str, known: list[str]) -> None:
        self.identifier, self.location, self.branch = identifier, location, branch
        table = identifier.split("$", 1)[0]
        PaimonOpsError.__init__(self, f"branch {branch!r} of {table} does not exist ({location}; branches: "
                                      f"{', '.join(known) or 'none besides main'})")


class CorruptMetadataError(PaimonOpsError):
    """A metadata or data file that cannot be read or decoded; nothing is written after this."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class UnsafeNameError(CorruptMetadataError):
    """Metadata names a file by something other than a plain file name ('../x', 'a/b', an absolute path). Never
    "delete less": every operation stops before its first delete."""


class MissingFileError(CorruptMetadataError):
    """A file referenced from metadata does not exist."""

    def __init__(self, path: str, referenced_by: str = "") -> None:
        problem = "file does not exist" + (f" (referenced by {referenced_by})" if referenced_by else "")
        super().__init__(path, problem)

    @classmethod
    def worded(cls, path: str, problem: str) -> MissingFileError:
        """The error with the words another process reported (a Spark executor's), not worded again."""
        e = cls(path)
        CorruptMetadataError.__init__(e, path, problem)
        return e


class InvalidOptionError(PaimonOpsError):
    """A table option (or an override of it) with a value paimon-ops cannot use: names the option, the value, what
    was expected and where it is set."""

    def __init__(self, name: str, value: object, expected: str, where: str = "") -> None:
        self.name = name
        self.value = value
        self.expected = expected
        loc = f" on {where}" if where else ""
        what = name if name.startswith("-") else f"option {name!r}"  # a command-line flag names itself
        super().__init__(f"invalid value {value!r} for {what}{loc}: expected {expected}")


class InvalidArgumentError(PaimonOpsError):
    """A bad argument to an operation (tag name, retention, timestamp ...)."""


class UnsupportedError(PaimonOpsError):
    """A table feature paimon-ops does not (yet) handle; refusing is safer than guessing."""


class FormatError(PaimonOpsError, ValueError):
    """A value or bytes that do not fit the format: an encoder refusing a value (a decimal too wide, a row of the
    wrong arity), a decoder refusing bytes or text. Also a ValueError: the codecs' own callers catch those of the
    libraries underneath (pyarrow, fastavro) with it."""


class PartitionTimeError(PaimonOpsError):
    """A partition's time text the formatter cannot parse (Java: DateTimeParseException)."""


class PatternError(InvalidArgumentError):
    """A partition timestamp formatter or pattern that is invalid or not supported (Java: IllegalArgumentException)."""


class CommitConflictError(PaimonOpsError):
    """Our commit conflicts with what others committed since our base snapshot."""

    def __init__(self, table: str, base_snapshot: int | None, latest_snapshot: int | None, detail: str) -> None:
        self.table = table
        self.base_snapshot = base_snapshot
        self.latest_snapshot = latest_snapshot
        self.detail = detail
        super().__init__(
            f"commit conflict on {table} (planned on snapshot {base_snapshot}, latest is {latest_snapshot}): "
            f"{detail}. Nothing was committed; re-run to re-plan on the latest snapshot."
        )


class CommitOutcomeUnknownError(PaimonOpsError):
    """A commit failed part way and whether its snapshot became visible cannot be told now (a catalog server that did
    not answer, storage that cannot be read): nothing it wrote is removed — orphans at worst, never a snapshot naming
    deleted files."""


class UnsafeOperationError(PaimonOpsError):
    """A destructive operation refused because it could lose data."""


class PreflightError(UnsafeOperationError):
    """A destructive execution refused before its first delete: a path it would delete is not safe to delete now
    (outside the table, a symbolic link, not a plain file of its kind, not writable, still referenced). `path` names
    it; the table is exactly as it was."""

    def __init__(self, table: str, path: str, problem: str) -> None:
        self.table = table
        self.path = path
        self.problem = problem
        super().__init__(f"{table}: refusing to delete {path}: {problem}. Nothing was changed")


class CancelledError(PaimonOpsError):
    """The operation was interrupted (Ctrl-C, SIGTERM, a terminated Dagster run); what it wrote and did not commit
    was removed (`cleaned` files), nothing was committed."""

    def __init__(self, message: str, cleaned: int = 0) -> None:
        self.cleaned = cleaned
        super().__init__(message)


class CompactionTaskError(PaimonOpsError):
    """A compaction task failed on an executor; nothing was committed and its output was removed."""


class PeriodNotDueError(InvalidArgumentError):
    """The tag of a period was asked for before the period is due."""


class PeriodCannotBeTaggedError(UnsafeOperationError):
    """The right snapshot for a period cannot be tagged (expired, or past the max-delay guard)."""


class StalePlanError(PaimonOpsError):
    """A plan no longer describes the table (a commit, a tag, a rollback since it was made); nothing was changed."""

    def __init__(self, operation: str, table: str, changes: list[str]) -> None:
        self.operation = operation
        self.table = table
        self.changes = list(changes)
        super().__init__(f"the {operation} plan for {table} is stale: {'; '.join(changes)}. Nothing was changed; "
                         "plan again")


class PlanAlreadyAppliedError(StalePlanError):
    """A saved plan that is done already: the files it deletes are gone, the files it writes are there (it was
    applied before); nothing was changed."""

    def __init__(self, operation: str, table: str, where: str, evidence: str) -> None:
        PaimonOpsError.__init__(self, f"the {operation} plan {where} was already applied to {table}: {evidence}. "
                                      "Nothing was changed")
        self.operation, self.table, self.changes = operation, table, ["already applied"]


class UnreachableError(PaimonOpsError):
    """Infrastructure (a Spark master, a Spark Connect server, an object store endpoint) did not answer in time;
    nothing was changed."""

    def __init__(self, endpoint: str, detail: str, what: str = "") -> None:
        self.endpoint = endpoint
        self.detail = detail
        super().__init__(f"{what + ' ' if what else ''}{endpoint} is unreachable: {detail}. Nothing was changed.")


class CatalogError(PaimonOpsError):
    """A catalog (Hive Metastore, JDBC database, REST server) refused or failed a request: names its endpoint, never a
    secret; nothing was changed unless the message says otherwise."""

    def __init__(self, endpoint: str, detail: str) -> None:
        self.endpoint = endpoint
        self.detail = detail
        super().__init__(f"catalog {endpoint}: {detail}")


class LockTimeoutError(CatalogError):
    """The catalog's lock of a table was not acquired within `lock-acquire-timeout`: another writer holds it (or a
    crashed one left it); nothing was committed."""

    def __init__(self, endpoint: str, table: str, waited_s: float, holder: str = "") -> None:
        self.table = table
        self.waited_s = waited_s
        CatalogError.__init__(self, endpoint, f"the lock of table {table} was not acquired within {waited_s:g} s "
                                              f"(lock-acquire-timeout){'; ' + holder if holder else ''}; nothing was "
                                              "committed")


# ---------------------------------------------------------------------------------------------- caller's words
# Messages name what the caller used: a keyword argument in Python, a flag on the command line. The CLI declares,
# per command, which flag stands for which keyword (`cli_words`); library code spells arguments through `arg`.
_CLI_FLAGS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("paimon_ops_cli_flags", default=None)
_UNSET = object()


def arg(keyword: str, value: object = _UNSET, python: str | None = None) -> str:
    """How the caller spells argument `keyword` (with `value`): `allow_short=True` in Python, `--allow-short` on the
    command line; `mode='full'` / `--mode full`. `python` overrides the Python spelling (e.g. another function)."""
    flags = _CLI_FLAGS.get()
    if flags is not None and keyword in flags:
        flag = flags[keyword]
        if value is _UNSET or value is True:
            return flag
        if isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        return f"{flag} {value}"
    if python is not None:
        return python
    if value is _UNSET:
        return keyword
    return f"{keyword}={value!r}"


@contextlib.contextmanager
def cli_words(flags: dict[str, str]) -> Iterator[None]:
    """Within this block, `arg` spells keywords as these command-line flags."""
    token = _CLI_FLAGS.set(dict(flags))
    try:
        yield
    finally:
        _CLI_FLAGS.reset(token)


class ObjectStoreError(PaimonOpsError, OSError):
    """An object store could not be reached or used (endpoint, credentials, bucket); names the location and endpoint,
    never a secret. Also an OSError, so I/O error handling treats it as one."""


class MissingExtraError(PaimonOpsError, ImportError):
    """An optional dependency is not installed: the message names the extra to install (one line)."""

    def __init__(self, what: str, extra: str, module: str):
        self.extra, self.module = extra, module
        super().__init__(f"{what} needs {module}, which is not installed: pip install 'paimon-ops[{extra}]'")


def require_module(module: str, extra: str, what: str) -> None:
    """Raise MissingExtraError unless `module` can be imported (looked up, not imported)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtraError(what, extra, module)
