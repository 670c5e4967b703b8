"""Building real warehouses for the Dagster tests: tables written by our engine with controlled commit times,
deletion vectors, a corrupt snapshot and a malformed tag.create-time."""
from __future__ import annotations

import datetime as dt
import uuid
from zoneinfo import ZoneInfo

import pyarrow as pa

from paimon_ops.format.deletion_vectors import DeletionVector, write_dv_index_file
from paimon_ops.format.manifest import DeletionVectorMeta, FileKind, IndexManifestEntry, ManifestEntry
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from paimon_ops.table.writer import TableWriter, create_table

BERLIN = ZoneInfo("Europe/Berlin")


def ms(year: int, month: int, day: int, hour: int = 12, minute: int = 0, tz=BERLIN) -> int:
    return int(dt.datetime(year, month, day, hour, minute, tzinfo=tz).timestamp() * 1000)


def write(table: FileStoreTable, data: dict, at_millis: int) -> int:
    """One APPEND commit at a chosen commit time; returns the snapshot id."""
    w = TableWriter(table)
    target = pa.schema([f for f in _arrow(table) if f.name in data])
    w.write(pa.Table.from_pydict(data, schema=target))
    return w.commit(now_millis=at_millis).id


def _arrow(table: FileStoreTable) -> pa.Schema:
    from paimon_ops.format.types import arrow_schema
    return arrow_schema(table.schema.row_type)


def upgrade_to_max_level(table: FileStoreTable, at_millis: int, level: int = 5) -> int:
    """A COMPACT commit moving every level-0 file to `level` (one file per bucket, so no overlap)."""
    scanner = TableScanner(table)
    res = scanner.scan_latest()
    entries = []
    for (_, _), files in res.buckets().items():
        assert len(files) == 1, "upgrade helper expects one file per bucket"
        f = files[0]
        entries.append(ManifestEntry(FileKind.DELETE, f.partition, f.bucket, f.total_buckets, f.meta))
        entries.append(ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets, f.meta.with_level(level)))
    snap = FileStoreCommit(table).commit(CommitChanges(data=tuple(entries)), "COMPACT", res.snapshot.id,
                                         now_millis=at_millis)
    return snap.id


def add_deletion_vectors(table: FileStoreTable, deleted: dict[int, int], at_millis: int) -> int:
    """Mark the first `deleted[bucket]` rows of the (single) file of each bucket deleted; one COMPACT commit."""
    scanner = TableScanner(table)
    res = scanner.scan_latest()
    added = []
    for (partition, bucket), files in res.buckets().items():
        n = deleted.get(bucket)
        if not n:
            continue
        f = files[0]
        data, ranges = write_dv_index_file({f.name: DeletionVector(range(n))}, bitmap64=False)
        name = f"index-{uuid.uuid4()}-0"
        table.io.write_bytes(f"{table.index_dir}/{name}", data)
        added.append(IndexManifestEntry(FileKind.ADD, partition, bucket, DELETION_VECTORS, name, len(data),
                                        len(ranges), tuple(DeletionVectorMeta(r.data_file, r.offset, r.length,
                                                                              r.cardinality) for r in ranges)))
    snap = FileStoreCommit(table).commit(CommitChanges(index_added=tuple(added)), "COMPACT", res.snapshot.id,
                                         now_millis=at_millis)
    return snap.id


ORDERS = "shop.orders"  # PK, 2 buckets, deletion vectors, tags at 02:30 Europe/Berlin; snapshots 1-4 (Mar 26-28)
EVENTS = "shop.events"  # partitioned append table, small files, no tag schedule
BROKEN = "shop.broken"  # corrupt latest snapshot
BADTIME = "shop.badtime"  # tag.create-time = '25:99'


def build_orders(warehouse: str, extra_options: dict[str, str] | None = None) -> FileStoreTable:
    t = create_table(warehouse, ORDERS, [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")],
                     primary_keys=["id"],
                     options={"bucket": "2", "deletion-vectors.enabled": "true", "tag.create-time": "02:30",
                              "tag.create-time-zone": "Europe/Berlin", **(extra_options or {})})
    write(t, {"id": list(range(0, 40)), "name": [f"n{i}" for i in range(40)], "amount": list(range(40))},
          ms(2026, 3, 26, 10))
    upgrade_to_max_level(t, ms(2026, 3, 26, 11))
    # 40 rows hash into the two buckets; delete 15 rows of bucket 0's file (well over 20 %), 1 of bucket 1's.
    add_deletion_vectors(t, {0: 15, 1: 1}, ms(2026, 3, 27, 9))
    # a day later: new keys as level-0 files (invisible to DV-mode readers until compacted), snapshot 4
    write(t, {"id": list(range(100, 110)), "name": [f"m{i}" for i in range(10)], "amount": [1] * 10},
          ms(2026, 3, 28, 10))
    return FileSystemCatalog(warehouse).get_table(ORDERS)


def build_events(warehouse: str) -> FileStoreTable:
    t = create_table(warehouse, EVENTS, [("dt", "STRING"), ("id", "BIGINT"), ("payload", "STRING")],
                     partition_keys=["dt"], options={"bucket": "-1", "snapshot.num-retained.min": "2",
                                                      "snapshot.time-retained": "1 min",
                                                      "snapshot.expirable-threshold": "3"})
    for i in range(6):  # six small files in dt=2026-03-27 (threshold 5), one in dt=2026-03-28
        write(t, {"dt": ["2026-03-27"] * 3, "id": [i * 3, i * 3 + 1, i * 3 + 2], "payload": ["x"] * 3},
              ms(2026, 3, 27, 8 + i))
    write(t, {"dt": ["2026-03-28"], "id": [100], "payload": ["y"]}, ms(2026, 3, 28, 8))
    return FileSystemCatalog(warehouse).get_table(EVENTS)


def build_broken(warehouse: str) -> FileStoreTable:
    t = create_table(warehouse, BROKEN, [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                     options={"bucket": "1"})
    write(t, {"id": [1, 2], "v": ["a", "b"]}, ms(2026, 3, 26, 10))
    write(t, {"id": [3], "v": ["c"]}, ms(2026, 3, 26, 11))
    t.io.write_bytes(t.snapshots.path(2), b'{"version": 3, "id": 2, "schemaId": 0, "baseManif')  # truncated JSON
    return t


def build_badtime(warehouse: str) -> FileStoreTable:
    t = create_table(warehouse, BADTIME, [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                     options={"bucket": "1", "tag.create-time": "25:99"})
    write(t, {"id": [1], "v": ["a"]}, ms(2026, 3, 26, 10))
    return t


def build_warehouse(warehouse: str, broken: bool = True) -> str:
    build_orders(warehouse)
    build_events(warehouse)
    if broken:
        build_broken(warehouse)
        build_badtime(warehouse)
    return warehouse


def table_files(table: FileStoreTable) -> dict[str, int]:
    """Every file under the table root with its size (to prove nothing was deleted or rewritten)."""
    return {st.path: st.size for st in table.io.walk_files(table.root)}


# ---------------------------------------------------------------------------------------------- Dagster helpers
def table_key(identifier: str):
    """The asset of a table (`db.t`: paimon/db/t) or of a branch (`db.t$branch_b`: paimon/db/t/branch_b)."""
    from dagster import AssetKey

    from paimon_ops.table.table import Identifier
    ident = Identifier.parse(identifier)
    return AssetKey(["paimon", ident.database, ident.table, *([f"branch_{ident.branch}"] if ident.branch != "main"
                                                               else [])])


def everything(defs) -> list:
    """Every asset and check definition of a code location: what the asset page selects from (a table's checks are
    the outputs of an op of their own)."""
    return [*defs.assets, *defs.asset_checks]


def op_name(defs, identifier: str) -> str:
    """The op holding the table (one per kind of table): its run config goes under ops: {<op>: {config: …}}."""
    return defs.get_assets_def(table_key(identifier)).node_def.name


def run_job(defs, job_name: str, identifier: str, instance, config: dict | None = None, **kw):
    """Run one paimon_* job for one table, as a sensor or the launchpad would (asset selection = the table)."""
    job = defs.resolve_job_def(job_name)
    run_config = {"ops": {op_name(defs, identifier): {"config": config}}} if config else None
    return job.execute_in_process(instance=instance, asset_selection=[table_key(identifier)],
                                  run_config=run_config, **kw)


def observations(result, key, planned: bool = False) -> list[dict]:
    """Metadata (plain values) of the observations a run recorded on `key` (`planned`: the plans it logged before
    executing, instead of its final observations)."""
    out = []
    for e in result.all_events:
        if e.event_type_value == "ASSET_OBSERVATION":
            obs = e.event_specific_data.asset_observation
            md = {k: v.value for k, v in obs.metadata.items()}
            if obs.asset_key == key and (md.get("phase") == "planned") == planned:
                out.append(md)
    return out


def materializations(result) -> list:
    return [e.event_specific_data.materialization for e in result.get_asset_materialization_events()]
