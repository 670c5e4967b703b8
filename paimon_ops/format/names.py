"""File names read from metadata must be plain names: they are joined to a directory the table decides.

A name with a separator, a parent reference, a drive or control characters would let a crafted (or corrupt)
manifest point an operation at a file of another bucket, another table or outside the warehouse. Java Paimon
resolves such names as given; paimon-ops refuses the metadata file instead, before anything is deleted."""
from __future__ import annotations

import re
from typing import Sequence

from paimon_ops.errors import UnsafeNameError

# A separator or a control character anywhere: one regex scan (C speed) per name, or per batch of names.
_UNSAFE_CHAR = re.compile(r"[\x00-\x1f\x7f/\\]")
_NOT_NAMES = frozenset(("", ".", ".."))


def is_plain_name(name: object) -> bool:
    if not isinstance(name, str) or name in _NOT_NAMES:
        return False
    return _UNSAFE_CHAR.search(name) is None


def first_unplain(names: Sequence[object]) -> int | None:
    """Index of the first name in `names` that is not a plain file name, or None: a few C-level operations per
    batch (one join and one regex scan over all names) instead of a check per name."""
    try:
        joined = "".join(names)  # type: ignore[arg-type]
    except TypeError:  # a non-string in the batch
        joined = None
    if joined is not None and _UNSAFE_CHAR.search(joined) is None and _NOT_NAMES.isdisjoint(names):
        return None
    for i, n in enumerate(names):
        if not is_plain_name(n):
            return i
    return None


def require_plain_name(name: object, path: str, what: str) -> str:
    """`name` if it is a plain file name, else UnsafeNameError (a CorruptMetadataError) naming the metadata file."""
    if not is_plain_name(name):
        raise UnsafeNameError(path, f"{what} {name!r} is not a plain file name (it contains a path separator, "
                                         "'..', or control characters); refusing to act on this metadata")
    return name  # type: ignore[return-value]
