"""Proof: a COMPACT-style commit we planned on a Java table conflicts with a Java compaction that removed
its files first: CommitConflictError, no snapshot, no manifest left behind, Java keeps reading the table."""
from __future__ import annotations

import os

import pytest

from paimon_ops.errors import CommitConflictError
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests.interop import java_harness as jh
from tests.interop.interop_util import canon

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]


def test_our_compaction_conflicts_with_a_java_compaction(java_tables):
    case = java_tables["conflict_pk"]
    table = FileSystemCatalog(case.warehouse).get_table(case.identifier)
    base = table.snapshots.latest()
    planned = TableScanner(table).scan(base)
    assert len(planned.files) == 2 and {f.level for f in planned.files} == {0}
    top = table.options.num_levels - 1
    changes = []
    for f in planned.files:  # disjoint key ranges 0..4 and 5..9: a valid upgrade of both to the top level
        changes += [f.entry(FileKind.DELETE),
                    ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets, f.meta.with_level(top))]

    compacted = case.java.compact(full=True)  # Java gets there first: both level-0 files are rewritten
    assert len(compacted["snapshot_ids"]) == 1
    manifest_dir, snapshot_dir = table.path("manifest"), table.path("snapshot")
    before = (set(os.listdir(manifest_dir)), set(os.listdir(snapshot_dir)))

    with pytest.raises(CommitConflictError, match="no longer live") as ei:
        FileStoreCommit(table).commit(CommitChanges(data=tuple(changes)), "COMPACT", base.id)
    assert (ei.value.base_snapshot, ei.value.latest_snapshot) == (base.id, compacted["snapshot_ids"][0])
    assert (set(os.listdir(manifest_dir)), set(os.listdir(snapshot_dir))) == before
    assert table.snapshots.latest_id() == compacted["snapshot_ids"][0]
    read, missing = jh.run_many([("read", case.java.payload()), ("check_files", case.java.payload())])
    assert canon(read["rows"]) == canon(case.written) and missing["missing"] == []
