"""Random histories: write-only commits (level 0; by Java 0.9's own writer for odd seeds, by ours for even ones)
interleaved with our minor (and some full) compactions, then Java Paimon 0.9 reads the table at EVERY snapshot and
reads the changelog of every compaction.

Checked per seed, in one JVM call:
* every snapshot reads as the model of the merge engine says (tables that skip level 0 — deletion vectors,
  first-row — show the state as of the last compaction, which moves all of level 0 up);
* the changelog is consistent: replayed in order, every -U/-D retracts exactly the row it names, every +I is a new
  key, and at every compaction of a lookup-producer table (and every full compaction of a full-compaction-producer
  table) the replayed changelog equals what Java reads;
* Java finds every file of the latest snapshot.
"""
from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import TableWriter, create_table
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

FIELDS = [("pt", "STRING"), ("k", "INT"), ("v", "BIGINT"), ("s", "STRING")]
KINDS = {
    "dv_dedup": {"deletion-vectors.enabled": "true"},
    "lookup_pu": {"changelog-producer": "lookup", "merge-engine": "partial-update"},
    "dv_agg_lookup": {"deletion-vectors.enabled": "true", "changelog-producer": "lookup", "merge-engine": "aggregation",
                      "fields.v.aggregate-function": "sum"},
    "first_row": {"merge-engine": "first-row", "changelog-producer": "lookup"},
    "lookup_dedup": {"changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true"},
    "full_cl": {"changelog-producer": "full-compaction"},
    "dv_pu": {"deletion-vectors.enabled": "true", "merge-engine": "partial-update"},
    "dv_dedup_lookup_orc": {"deletion-vectors.enabled": "true", "changelog-producer": "lookup", "file.format": "orc"},
}
SEEDS = list(range(8))


class Model:
    """The merge engine applied record by record (one dict per key)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.rows: dict[tuple, list] = {}

    def apply(self, row: list, op: int) -> None:
        key = (row[0], row[1])
        cur = self.rows.get(key)
        opts = KINDS[self.kind]
        engine = opts.get("merge-engine", "deduplicate")
        if engine == "deduplicate":
            if op == 3:
                self.rows.pop(key, None)
            else:
                self.rows[key] = list(row)
        elif engine == "first-row":
            if cur is None:
                self.rows[key] = list(row)
        elif engine == "partial-update":
            if cur is None:
                self.rows[key] = list(row)
            else:
                self.rows[key] = [n if n is not None else o for n, o in zip(row, cur)]
        else:  # aggregation: v sum, s last_non_null_value
            if cur is None:
                self.rows[key] = list(row)
            else:
                v = row[2] if cur[2] is None else (cur[2] if row[2] is None else cur[2] + row[2])
                self.rows[key] = [row[0], row[1], v, row[3] if row[3] is not None else cur[3]]

    def snapshot(self) -> dict[tuple, list]:
        return {k: list(v) for k, v in self.rows.items()}


def _bag(rows) -> list[str]:
    return sorted(json.dumps(r) for r in rows)


def _history(seed: int, wh: str):
    rnd = random.Random(seed)
    kind = list(KINDS)[seed % len(KINDS)]
    opts = {"bucket": str(rnd.choice([1, 2])), "write-only": "true",
            "num-sorted-run.compaction-trigger": str(rnd.choice([2, 3, 5])), **KINDS[kind]}
    t = create_table(wh, "db.t", FIELDS, partition_keys=["pt"], primary_keys=["pt", "k"], options=opts)
    model = Model(kind)
    java_writer = seed % 2 == 1
    java = JavaTable(wh, "db", "t")
    deletes = opts.get("merge-engine", "deduplicate") == "deduplicate"
    steps: list[dict] = []   # per snapshot: {"id", "kind", "state" (full), "visible"}
    visible = {}
    skips_level0 = opts.get("deletion-vectors.enabled") == "true" or opts.get("merge-engine") == "first-row"
    for i in range(rnd.randint(10, 14)):
        n = rnd.randint(1, 8)
        rows, ops = [], []
        for _ in range(n):
            op = 3 if deletes and rnd.random() < 0.2 else 0
            v = None if rnd.random() < 0.15 else rnd.randint(-50, 50)
            s = None if rnd.random() < 0.2 else f"s{seed}-{i}-{rnd.randint(0, 9)}"
            rows.append([rnd.choice(["a", "b"]), rnd.randint(0, 24), v, s])
            ops.append(op)
        if java_writer:
            out = java.write([{"rows": rows, "kinds": ["-D" if op == 3 else "+I" for op in ops]}])
            snap_id = out["latest_snapshot_id"]
        else:
            w = TableWriter(FileStoreTable(t.location))
            w.write(pa.table({"pt": [r[0] for r in rows], "k": pa.array([r[1] for r in rows], pa.int32()),
                              "v": pa.array([r[2] for r in rows], pa.int64()), "s": [r[3] for r in rows]}), ops)
            snap_id = w.commit().id
        for r, op in zip(rows, ops):
            model.apply(r, op)
        steps.append({"id": snap_id, "kind": "APPEND", "state": model.snapshot(),
                      "visible": visible if skips_level0 else model.snapshot()})
        r = rnd.random()
        mode = "full" if r < 0.12 else ("minor" if r < 0.6 else None)
        if i == 0 or (i >= 2 and mode is None and rnd.random() < 0.2):
            mode = "minor"
        if mode:
            report = po.Table(FileStoreTable(t.location)).maintenance.compact(mode=mode).execute()
            if report.snapshot_id is not None:
                visible = model.snapshot()
                steps.append({"id": report.snapshot_id, "kind": mode, "state": model.snapshot(), "visible": visible})
    report = po.Table(FileStoreTable(t.location)).maintenance.compact(mode="full").execute(
        )  # a final full compaction: every changelog producer emits
    if report.snapshot_id is not None:
        visible = model.snapshot()
        steps.append({"id": report.snapshot_id, "kind": "full", "state": model.snapshot(), "visible": visible})
    return kind, opts, steps, java_writer


@pytest.mark.parametrize("seed", SEEDS)
def test_random_history_read_by_java_at_every_snapshot(tmp_path, seed):
    wh = str(tmp_path / "wh")
    kind, opts, steps, _ = _history(seed, wh)
    jt = JavaTable(wh, "db", "t")
    compactions = [s for s in steps if s["kind"] != "APPEND"]
    cmds = [("read", jt.payload(snapshot_id=s["id"])) for s in steps]
    cmds += [("audit_log", jt.payload(start=s["id"] - 1, end=s["id"])) for s in compactions]
    cmds.append(("check_files", jt.payload()))
    out = jh.run_many(cmds)
    reads, logs, missing = out[:len(steps)], out[len(steps):-1], out[-1]
    for s, r in zip(steps, reads):
        assert _bag(r["rows"]) == _bag(s["visible"].values()), f"{kind} {opts}: snapshot {s['id']} ({s['kind']})"
    assert missing["missing"] == []

    producer = opts.get("changelog-producer")
    if producer not in ("lookup", "full-compaction"):
        assert all(not lg["rows"] for lg in logs)
        return
    replay: dict[tuple, list] = {}
    pending_before: dict[tuple, list] = {}
    for s, lg in zip(compactions, logs):
        for row in lg["rows"]:
            rk, values = row[0], row[1:]
            key = (values[0], values[1])
            if rk in ("-U", "-D"):
                assert replay.get(key) == values, f"{kind}: snapshot {s['id']} retracts {values}, had {replay.get(key)}"
                del replay[key]
                if rk == "-U":
                    pending_before[key] = values
            elif rk == "+U":
                assert key in pending_before, f"{kind}: +U without -U for {key} in snapshot {s['id']}"
                del pending_before[key]
                replay[key] = values
            else:
                assert key not in replay, f"{kind}: +I of existing key {key} in snapshot {s['id']}"
                replay[key] = values
        assert not pending_before
        if producer == "lookup" or s["kind"] == "full":
            assert _bag(replay.values()) == _bag(s["state"].values()), f"{kind}: changelog replay at {s['id']}"
