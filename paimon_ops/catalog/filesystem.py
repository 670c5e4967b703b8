"""The filesystem catalog (`metastore=filesystem`, the default): tables are the directories
`<warehouse>/<db>.db/<table>` holding a `schema/` directory; commits are create-if-absent of `snapshot-<N>` (a
conditional put on object stores), with no lock and no metastore (Java's FileSystemCatalog has no lock factory)."""
from __future__ import annotations

from typing import Mapping

from paimon_ops.catalog.base import Catalog, TableEntry
from paimon_ops.errors import InvalidOptionError, TableNotFoundError
from paimon_ops.options import LOCK_ENABLED
from paimon_ops.table import table as _tables
from paimon_ops.table.fileio import FaultHook, FileIO


class FileSystemCatalog(Catalog):
    metastore = "filesystem"

    def __init__(self, warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> None:
        super().__init__(warehouse, options, fault_hook=fault_hook)
        if not self.warehouse:
            raise InvalidOptionError("warehouse", None, "the warehouse directory (a path or URI)", "catalog")
        if self.options.value(LOCK_ENABLED):  # Java's filesystem catalog has no lock to take either
            raise InvalidOptionError(LOCK_ENABLED.key, "true", "false: the filesystem catalog has no lock; give the "
                                     "catalog whose lock the table's writers take (metastore=hive or metastore=jdbc)",
                                     "catalog")
        # the directory listing (probes the warehouse: a missing one, or bad store credentials, fail here)
        self.files = _tables.FileSystemCatalog(self.warehouse, fault_hook, self.store_options or None)
        self.io = self.files.io
        self.root = self.files.root

    @property
    def lock_enabled(self) -> bool:
        return False  # object stores commit by conditional put; there is no catalog lock here

    def databases(self) -> list[str]:
        return self.files.databases()

    def tables(self, database: str) -> list[str]:
        return self.files.tables(database)

    def all_tables(self) -> list[str]:
        return self.files.all_tables()

    def table_path(self, identifier: str | _tables.Identifier) -> str:
        return self.files.table_path(identifier)

    def load_table(self, identifier: _tables.Identifier) -> TableEntry:
        path = self.files.table_path(identifier)
        if not self.io.is_dir(path):
            known = ", ".join(self.all_tables()) or "none"
            raise TableNotFoundError(str(identifier), self.io.uri(path), f"tables in this warehouse: {known}")
        return TableEntry(identifier, path)

    def table_io(self, entry: TableEntry) -> tuple[FileIO, str]:
        return self.io, entry.location  # one FileIO for the warehouse: nothing opened per table

    def table_files(self, identifier: str | _tables.Identifier) -> tuple[FileIO, str]:
        return self.io, self.files.table_path(identifier)  # no request


__all__ = ["FileSystemCatalog"]
