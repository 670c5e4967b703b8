"""The metastore mark-done actions through a real Hive Metastore, beside Java Paimon 0.9's own (its
PartitionMarkDoneAction through its HiveCatalog, on a twin table): `done-partition` registers the same
`<value>.done` partitions the metastore lists for Java's twin, `mark-event` leaves a LOAD_DONE event the metastore
API (`isPartitionMarkedForEvent`) reports for both, `success-file` writes the same files; `done_partitions` reads every
kind of mark back. Without `metastore.partitioned-table` the metastore actions are refused in one line naming the
option, nothing marked."""
from __future__ import annotations

from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.lifecycle.mark_done import done_partitions
from tests.hive.conftest import java_hive_options, java_hive_table
from tests.safety.util import tree_digest

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("hh", "STRING NOT NULL"), ("id", "INT")]
ACTIONS = "success-file,done-partition,mark-event"
T0 = 1_780_000_000_000


def _catalog(uri: str, warehouse) -> po.Catalog:
    return po.Catalog(str(warehouse), options=java_hive_options(uri))


def test_metastore_actions_leave_what_javas_leave(hive_metastore, hms_client, hive_database, tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    options = {"bucket": "-1", "metastore.partitioned-table": "true", "partition.mark-done-action": ACTIONS}
    ours, twin = (java_hive_table(wh, db, n, uri) for n in ("ours", "twin"))
    for jt in (ours, twin):
        jt.create(FIELDS, partition_keys=["dt", "hh"], options=options)
        jt.write([{"rows": [[d, h, 1] for d in ("2026-05-27", "2026-05-28") for h in ("01", "02")]}])
    specs = [{"dt": "2026-05-27", "hh": "01"}, {"dt": "2026-05-28", "hh": "02"}]
    with _catalog(uri, wh) as cat:
        table = cat.get_table(f"{db}.ours")
        plan = table.maintenance.mark_partition_done(partitions=specs, now=T0)
        assert plan.details["actions"] == ACTIONS.split(",")
        kinds = sorted({a.kind for a in plan.files})
        assert kinds == ["marker", "metastore-event", "metastore-partition"]
        report = plan.execute()
        assert report.written == {"marker": 2, "metastore-partition": 2, "metastore-event": 2}
        twin.call("mark_partition_done", partitions=specs)

        names = hms_client.partition_names(db, "ours")
        assert names == hms_client.partition_names(db, "twin")
        assert "dt=2026-05-27/hh=01.done" in names and "dt=2026-05-28/hh=02.done" in names
        for spec in specs:  # the metastore API reports the events of both
            assert hms_client.is_partition_marked_done(db, "ours", spec)
            assert hms_client.is_partition_marked_done(db, "twin", spec)
        assert not hms_client.is_partition_marked_done(db, "ours", {"dt": "2026-05-27", "hh": "02"})
        root = Path(wh) / f"{db}.db"
        assert sorted(str(p.relative_to(root / "ours")) for p in (root / "ours").rglob("_SUCCESS")) == \
            sorted(str(p.relative_to(root / "twin")) for p in (root / "twin").rglob("_SUCCESS"))

        marks = done_partitions(cat.get_table(f"{db}.ours").raw)
        assert sorted((m.path, m.action) for m in marks) == sorted(
            (p, a) for p in ("dt=2026-05-27/hh=01/", "dt=2026-05-28/hh=02/") for a in ACTIONS.split(","))
        # Java's reader of the table (0.9) still reads its rows: the .done partitions hold no data
        assert sorted(ours.rows()) == sorted(twin.rows())


def test_metastore_actions_need_partitions_in_the_metastore(hive_metastore, hive_database, tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "plain", uri)
    jt.create(FIELDS, partition_keys=["dt", "hh"], options={"bucket": "-1"})
    jt.write([{"rows": [["2026-05-27", "01", 1]]}])
    before = tree_digest(str(wh))
    with _catalog(uri, wh) as cat:
        table = cat.get_table(f"{db}.plain")
        for action in ("done-partition", "mark-event"):
            with pytest.raises(po.InvalidOptionError, match=f"metastore.partitioned-table.*true: "
                                                            f"partition.mark-done-action={action}"):
                table.maintenance.mark_partition_done(partitions=[{"dt": "2026-05-27", "hh": "01"}],
                                                      actions=["success-file", action])
    assert tree_digest(str(wh)) == before
