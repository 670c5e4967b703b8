"""The one small error hierarchy of paimon-ops.

Every message says what is wrong, where (table, file or option) and, where it helps, what to do.
"""
from __future__ import annotations


class PaimonOpsError(Exception):
    """Base class of every error raised on purpose by paimon-ops."""


class TableNotFoundError(PaimonOpsError):
    def __init__(self, identifier: str, location: str, hint: str = "") -> None:
        self.identifier = identifier
        self.location = location
        msg = f"table {identifier!r} not found at {location}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class CorruptMetadataError(PaimonOpsError):
    """A metadata or data file that cannot be read or decoded; nothing is written after this."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class MissingFileError(CorruptMetadataError):
    """A file referenced from metadata does not exist."""

    def __init__(self, path: str, referenced_by: str = "") -> None:
        problem = "file does not exist" + (f" (referenced by {referenced_by})" if referenced_by else "")
        super().__init__(path, problem)


class InvalidOptionError(PaimonOpsError):
    def __init__(self, name: str, value: object, expected: str, where: str = "") -> None:
        self.name = name
        self.value = value
        self.expected = expected
        loc = f" on {where}" if where else ""
        super().__init__(f"invalid value {value!r} for option {name!r}{loc}: expected {expected}")


class InvalidArgumentError(PaimonOpsError):
    """A bad argument to an operation (tag name, retention, timestamp ...)."""


class UnsupportedError(PaimonOpsError):
    """A table feature paimon-ops does not (yet) handle; refusing is safer than guessing."""


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


class UnsafeOperationError(PaimonOpsError):
    """A destructive operation refused because it could lose data."""


class ObjectStoreError(PaimonOpsError, OSError):
    """An object store could not be reached or used (endpoint, credentials, bucket); names the location and endpoint,
    never a secret. Also an OSError, so I/O error handling treats it as one."""
