"""Waiting for "partition done" in a real Airflow 3: `airflow dags test` runs a DAG whose deferrable
PaimonPartitionDoneSensor defers to PaimonPartitionDoneTrigger while the partition is not marked done; another
process — Java Paimon 0.9's own mark_partition_done — marks it, the trigger fires, the downstream task runs with the
marks. The AssetWatcher trigger (PaimonPartitionsDoneTrigger), run by Airflow's trigger machinery in the Airflow
environment, emits one event per partition newly marked done, and none for marks older than the watcher."""
from __future__ import annotations

import json
import subprocess
import time

import pyarrow as pa

from tests.airflow.conftest import TEST_DAGS, java_or_fail, make_home
from tests.interop.java_harness import JavaTable
from tests.net import patient

DAYS = ["2026-05-27", "2026-05-28"]


def _table(wh: str) -> None:
    from paimon_ops.table.writer import TableWriter, create_table
    t = create_table(wh, "shop.events", [("dt", "STRING"), ("id", "INT")], partition_keys=["dt"],
                     options={"bucket": "-1"})
    w = TableWriter(t)
    w.write(pa.table({"dt": DAYS, "id": pa.array([1, 2], pa.int32())}))
    w.commit()


def test_deferred_sensor_resumes_when_java_marks_the_partition_done(airflow_bin, tmp_path):
    java_or_fail()
    wh = str(tmp_path / "wh")
    _table(wh)
    ah = make_home(airflow_bin, tmp_path, wh, [TEST_DAGS / "paimon_partition_done.py"])
    ah.extra_env.update({"PAIMON_DONE_TABLE": "shop.events", "PAIMON_DONE_PARTITION": f"dt={DAYS[1]}"})
    log = tmp_path / "dags-test.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(airflow_bin / "airflow"), "dags", "test", "paimon_partition_done"],
                                cwd=ah.home, env=ah.env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + patient(180)
        while "running trigger in line" not in log.read_text():  # deferred: `dags test` runs the trigger
            assert proc.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, "the sensor never deferred:\n" + log.read_text()[-4000:]
            time.sleep(1)
        assert "Pausing task as DEFERRED" in log.read_text()
        time.sleep(2)  # the trigger polls (every second) a partition not yet done
        JavaTable(wh, "shop", "events").call("mark_partition_done", partitions=[{"dt": DAYS[1]}])
        assert proc.wait(patient(240)) == 0, log.read_text()[-6000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    states = dict(ah.sql("select task_id, state from task_instance where dag_id = 'paimon_partition_done'"))
    assert states == {"wait_for_partition": "success", "downstream": "success"}, states
    xcoms = {t: v if isinstance(v, str) else bytes(v).decode() for t, v in
             ah.sql("select task_id, value from xcom where dag_id = 'paimon_partition_done' and key = 'return_value'")}
    marks = json.loads(xcoms["wait_for_partition"])
    assert marks["path"] == f"dt={DAYS[1]}/" and [m["action"] for m in marks["marks"]] == ["success-file"]
    assert json.loads(xcoms["downstream"]) == f"dt={DAYS[1]}/ done by success-file"
    text = log.read_text()
    assert "is not marked done yet" in text and f"partition dt={DAYS[1]} of shop.events is done" in text


WATCH = """
import asyncio, json, time
import paimon_ops as po
from paimon_ops.airflow.partition_done import PaimonPartitionsDoneTrigger

WH = {wh!r}

def mark(day, now):
    po.Catalog(WH).get_table("shop.events").maintenance.mark_partition_done(partitions=[{{"dt": day}}],
                                                                            now=now).execute()

async def main():
    mark({old!r}, 1)  # marked before the watcher started: no event
    trigger = PaimonPartitionsDoneTrigger(table="shop.events", poll_interval=0.2)
    classpath, kwargs = trigger.serialize()
    events = []

    async def collect():
        async for e in trigger.run():
            events.append(e.payload)
    task = asyncio.ensure_future(collect())
    await asyncio.sleep(1.5)
    mark({new!r}, int(time.time() * 1000) + 1000)
    deadline = time.monotonic() + 60
    while len(events) < 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(1)  # (no second event for the same mark)
    task.cancel()
    print(json.dumps({{"classpath": classpath, "since": kwargs["since"], "events": events}}))

asyncio.run(main())
"""


def test_asset_watcher_trigger_fires_once_per_partition_newly_done(airflow_bin, tmp_path):
    wh = str(tmp_path / "wh")
    _table(wh)
    ah = make_home(airflow_bin, tmp_path, wh, [])
    proc = ah.python(WATCH.format(wh=wh, old=DAYS[0], new=DAYS[1]), timeout=180)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["classpath"] == "paimon_ops.airflow.partition_done.PaimonPartitionsDoneTrigger"
    assert [(e["path"], e["action"], e["partition"]) for e in got["events"]] == [
        (f"dt={DAYS[1]}/", "success-file", {"dt": DAYS[1]})]
