"""File names read from metadata must be plain names: they are joined to a directory the table decides.

A name with a separator, a parent reference, a drive or control characters would let a crafted (or corrupt)
manifest point an operation at a file of another bucket, another table or outside the warehouse. Java Paimon
resolves such names as given; paimon-ops refuses the metadata file instead, before anything is deleted."""
from __future__ import annotations

from paimon_ops.errors import UnsafeNameError


def is_plain_name(name: object) -> bool:
    if not isinstance(name, str) or not name or name in (".", ".."):
        return False
    if "/" in name or "\\" in name:
        return False
    return not any(ord(c) < 0x20 or ord(c) == 0x7F for c in name)


def require_plain_name(name: object, path: str, what: str) -> str:
    """`name` if it is a plain file name, else UnsafeNameError (a CorruptMetadataError) naming the metadata file."""
    if not is_plain_name(name):
        raise UnsafeNameError(path, f"{what} {name!r} is not a plain file name (it contains a path separator, "
                                         "'..', or control characters); refusing to act on this metadata")
    return name  # type: ignore[return-value]
