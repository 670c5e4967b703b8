"""The index manifest a commit writes keeps every entry it does not replace (Java's IndexManifestFileHandler).

* a bucketed table (here a fixed-bucket append table with deletion vectors) keys DV index files by (partition,
  bucket): replacing one bucket's file keeps every other bucket's and partition's entry; a new file for a bucket
  whose live file the commit does not delete is a conflict, and two new files for one bucket are refused — either
  would drop a file's vectors;
* an unaware-bucket append table keys them by file name: several files of one bucket live side by side, a commit
  that replaces one keeps the others.

pypaimon-rust 0.4.0 (an independent reader) reads exactly the rows the vectors leave after each commit.
"""
from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from paimon_ops.compact.dv import supports_cardinality, write_dv_index
from paimon_ops.errors import CommitConflictError, PaimonOpsError
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.format.manifest import IndexManifestEntry
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests import pypaimon_util as pu

FIELDS = [("dt", "STRING"), ("k", "INT"), ("v", "STRING")]


def _table(wh: str, name: str, bucket: int) -> FileStoreTable:
    opts = {"bucket": str(bucket), "deletion-vectors.enabled": "true"}
    if bucket > 0:
        opts["bucket-key"] = "k"
    t = create_table(wh, name, FIELDS, partition_keys=["dt"], options=opts)
    for i in range(3):
        write_rows(t, {"dt": ["d1", "d2"] * 20, "k": list(range(i * 40, i * 40 + 40)), "v": [f"w{i}"] * 40})
    return t.refresh()


class _Dvs:
    """Deletes positions of the table's data files through DV index files we commit, and knows the rows left."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.scanner = TableScanner(table)
        result = self.scanner.scan_latest()
        assert result is not None
        self.files = {f.name: f for f in result.files}
        self.deleted: dict[str, set[int]] = {}

    def entry(self, positions: dict[str, list[int]]) -> IndexManifestEntry:
        """One DV index file for the (one) bucket of `positions`' files, holding their whole vectors."""
        (part, bucket), = {(self.files[n].partition, self.files[n].bucket) for n in positions}
        dvs = {}
        for n, ps in positions.items():
            self.deleted.setdefault(n, set()).update(ps)
            dvs[n] = DeletionVector(sorted(self.deleted[n]))
        return write_dv_index(self.table, self.scanner, part, bucket, dvs, supports_cardinality(self.scanner))[0]

    def commit(self, added: list[IndexManifestEntry], deleted: list[IndexManifestEntry] = ()) -> list[IndexManifestEntry]:
        snap = self.table.snapshots.latest()
        FileStoreCommit(self.table).commit(CommitChanges(index_added=tuple(added), index_deleted=tuple(deleted)),
                                           "APPEND", snap.id)
        return self.live()

    def live(self) -> list[IndexManifestEntry]:
        t = self.table.refresh()
        return [ie for ie in TableScanner(t).index_entries(t.snapshots.latest()) if ie.index_type == DELETION_VECTORS]

    def rows(self) -> Counter:
        out: Counter = Counter()
        for n, f in self.files.items():
            data = pq.ParquetFile(self.scanner.data_file_path(f.partition, f.bucket, f.meta)).read().to_pylist()
            out.update(json.dumps([r["dt"], r["k"], r["v"]]) for i, r in enumerate(data)
                       if i not in self.deleted.get(n, ()))
        return out


def _rust(wh: str, ident: str) -> Counter:
    return Counter(json.dumps([r["dt"], r["k"], r["v"]]) for r in pu.rust_read(wh, ident).to_pylist())


def _by_bucket(d: _Dvs) -> dict[tuple[bytes, int], list[str]]:
    out: dict[tuple[bytes, int], list[str]] = {}
    for n, f in sorted(d.files.items()):
        out.setdefault((f.partition, f.bucket), []).append(n)
    return out


def test_bucketed_replace_keeps_other_buckets_and_partitions(tmp_path):
    wh = str(tmp_path / "wh")
    d = _Dvs(_table(wh, "db.fixed", 2))
    buckets = _by_bucket(d)
    assert len(buckets) == 4
    first = {pb: d.entry({n: [0] for n in names}) for pb, names in buckets.items()}
    live = d.commit(list(first.values()))
    assert sorted(ie.file_name for ie in live) == sorted(ie.file_name for ie in first.values())
    assert _rust(wh, "db.fixed") == d.rows()

    target = sorted(buckets)[0]
    new = d.entry({n: [1, 2] for n in buckets[target]})
    live = d.commit([new], [first[target]])
    assert {(ie.partition, ie.bucket): ie.file_name for ie in live} == {
        **{pb: ie.file_name for pb, ie in first.items()}, target: new.file_name}
    assert _rust(wh, "db.fixed") == d.rows()

    # a second file for a bucket whose live file stays would replace it: a conflict, nothing committed
    other = sorted(buckets)[1]
    snap = d.table.refresh().snapshots.latest()
    with pytest.raises(CommitConflictError, match="got a new DELETION_VECTORS index file"):
        d.commit([d.entry({buckets[other][0]: [3]})])
    # two new files for one bucket in one commit: refused (the bucket keeps one, the other's vectors would go)
    names = buckets[target]
    halves = [d.entry({names[0]: [4]}), d.entry({n: [4] for n in names[1:]})]
    with pytest.raises(PaimonOpsError, match="two DELETION_VECTORS index files for bucket"):
        d.commit(halves, [new])
    assert d.table.refresh().snapshots.latest_id() == snap.id


def test_unaware_bucket_keeps_every_index_file_of_the_bucket(tmp_path):
    wh = str(tmp_path / "wh")
    d = _Dvs(_table(wh, "db.ap", -1))
    (d1, names), (d2, names2) = sorted(_by_bucket(d).items())
    assert len(names) == 3
    a, b = d.entry({names[0]: [0, 1]}), d.entry({names[1]: [2], names[2]: [3]})
    c = d.entry({names2[0]: [5]})
    live = d.commit([a, b, c])  # several index files of one bucket, in one commit
    assert sorted(ie.file_name for ie in live) == sorted([a.file_name, b.file_name, c.file_name])
    assert _rust(wh, "db.ap") == d.rows()
    b2 = d.entry({names[1]: [7], names[2]: [3]})
    live = d.commit([b2], [b])
    assert sorted(ie.file_name for ie in live) == sorted([a.file_name, b2.file_name, c.file_name])
    assert _rust(wh, "db.ap") == d.rows()
