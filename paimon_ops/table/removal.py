"""Where paimon-ops may delete, and the quiet removal of what a run wrote and did not commit.

The foundation of the one deletion path (`execution.deleter`): every path it deletes is checked with
`check_paths` against `allowed_roots` (the real table root plus the configured external data paths), and the files
a failed or lost attempt wrote — a commit's manifests (`table.commit`), a compaction's output, a journal — are
removed by `remove_written`, under the same confinement. It lives with the table so that the commit, below the
execution core, cleans up through it without depending on the planner-facing deleter.
"""
from __future__ import annotations

import logging
import posixpath
from typing import Sequence

from paimon_ops.errors import PaimonOpsError, UnsafeOperationError
from paimon_ops.table.external import allowed_roots as external_roots
from paimon_ops.table.fileio import ensure_within
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)


def allowed_roots(table: FileStoreTable) -> list[str]:
    """The table root plus configured external data paths on its file system (data files may legally live there),
    as real paths."""
    return [table.root, *external_roots(table)]


def check_paths(roots: Sequence[str], paths: Sequence[str]) -> None:
    """Refuse (UnsafeOperationError, as ensure_within words it for the first root) any path outside every root:
    the roots are normalised once, then one normpath and one prefix test per path."""
    norm_roots = [posixpath.normpath(r) for r in roots]
    exact = set(norm_roots)
    prefixes = tuple(r.rstrip("/") + "/" for r in norm_roots)
    normpath = posixpath.normpath
    inside: set[str] = set()  # normalised directories inside a root: a plain name below one is inside too
    for p in paths:
        d, _, name = p.rpartition("/")
        if d in inside and name not in ("", ".", ".."):
            continue
        n = normpath(p)
        if n.startswith(prefixes):  # strictly below a root: its directory is the root or below it
            if n == p:
                inside.add(d)
            continue
        if n in exact:
            continue
        ensure_within(roots[0], p)  # raises, naming the path
        raise UnsafeOperationError(f"refusing to touch {p}: outside the table root {roots[0]}")  # (unreachable)


def remove_written(table: FileStoreTable, paths: Sequence[str], why: str = "") -> tuple[int, list[str]]:
    """Delete files this run wrote and did not commit (a failed or cancelled task, a lost commit): confined to the
    table's roots, plain files only, quiet about missing ones. Never raises — the error that made them leftovers is
    the one to report; a file that could not be deleted is logged and returned (an orphan for remove-orphans).
    Returns (deleted, not deleted)."""
    if not paths:
        return 0, []
    roots = allowed_roots(table)
    io = table.io.with_roots(roots[1:])
    deleted, failed = 0, []
    for p in paths:
        try:
            check_paths(roots, [p])
            deleted += bool(io.delete_file(p))
        except (OSError, PaimonOpsError) as e:
            log.warning("could not remove %s%s: %s", p, f" ({why})" if why else "", e)
            failed.append(p)
    return deleted, failed


__all__ = ["allowed_roots", "check_paths", "remove_written"]
