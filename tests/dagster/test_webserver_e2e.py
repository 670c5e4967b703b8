"""End to end through a real Dagster webserver: `dagster-webserver` and `dagster-daemon run` on a workspace of the
repository's code location (workspace.yaml's) and a second one holding two warehouses (their jobs listed apart), on
127.0.0.1 against a warehouse whose `shop.orders` has snapshots on each of the last five days and already holds the
tag of the first (made outside Dagster). With the observation sensor running and a dry-run compaction launched as
the launchpad would, headless Chromium checks the table asset page — schema, row count, never materialised, the
observation plots, the checks on the table — then opens the tags asset, where the existing tag shows as
materialised, launches a backfill of three more days from the partition dialog, the daemon runs it, and the tags
must then exist in the table, each on the snapshot of its day, and show as materialised; the last day stays missing.
Before that, a real compaction run's page shows its plan, progress and report lines in order; a compaction of 2 M
rows (`shop.big`, 16 buckets) is watched on its run page, and the screenshot is taken while it runs (plan and the
first progress lines shown; the run is still STARTED right after); the launchpads of paimon_compaction and
paimon_expire_snapshots show only their operation's section. The backfill of three days is one run (the tags'
single-run backfill policy). After it, one of the
backfilled tags is deleted outside Dagster: the observation sensor's run of its partition fails naming it, the
partition shows as failed, and a "Failed and missing" backfill from the dialog creates it again on its day's
snapshot (and the never-tagged last day). Every screenshot is taken once the elements it is about are on the page,
and checked.

Screenshots of every step and the webserver / daemon logs go to tests/artifacts/webserver_e2e/ (gitignored), the
screenshots also to the test's tmp dir; the last one (the backfill's runs, all succeeded) is also kept as
tests/artifacts/webserver_e2e.png, the artefact to keep. Every process the test starts (webserver, daemon,
chromedriver and the Chromium it launches) runs in its own session and is stopped by its own process-group id.

Runtime is dominated by the daemon: backfills are evaluated every few seconds (ui.BACKFILL_INTERVAL_S instead of
Dagster's 30 s; once to launch the runs, once to mark the backfill complete) and the runs of one table queue behind
its pool (limit 1).
"""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.dagster import ui_util as ui
from tests.net import free_port

pytestmark = pytest.mark.webserver

ASSET_PATH = ["paimon", "shop", "orders", "tags"]
TABLE_PATH = ["paimon", "shop", "orders"]
LOCATION = "paimon_ops"  # workspace.yaml's location_name
DIALOG = "//div[@role='dialog']"
RUNS_TIMEOUT_S = 240  # from launch until every run of the backfill succeeded


class Steps:
    """Wall-clock time of each step (written next to the screenshots, and printed with -s)."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.marks: list[tuple[str, float]] = []

    def mark(self, step: str) -> None:
        self.marks.append((step, round(time.monotonic() - self.t0, 1)))
        print(f"[webserver e2e] {self.marks[-1][1]:6.1f} s  {step}")


@pytest.fixture
def artifacts(tmp_path) -> Path:
    d = ui.ARTIFACTS / "webserver_e2e"
    shutil.rmtree(d, ignore_errors=True)
    (ui.ARTIFACTS / "webserver_e2e.png").unlink(missing_ok=True)  # no stale artefact if this run fails
    d.mkdir(parents=True)
    return d


@pytest.fixture
def stack(tmp_path, artifacts):
    """Warehouse, DAGSTER_HOME, webserver + daemon + browser (started together), all stopped at teardown."""
    reason = ui.browser_missing()
    if reason:
        pytest.skip(reason)
    steps = Steps()
    today = dt.datetime.now(ui.TAG_ZONE).date()
    warehouse = ui.build_past_days_warehouse(str(tmp_path / "warehouse"), today, n_days=5)
    from paimon_ops.lifecycle import autotag
    from paimon_ops.table.table import FileSystemCatalog
    autotag.create_tag_for_period(FileSystemCatalog(warehouse.path).get_table(ui.ORDERS), warehouse.days[0])  # outside Dagster
    ui.build_big_table(warehouse.path)
    workspace = _workspace_with_two_warehouses(tmp_path)
    home = tmp_path / "dagster_home"
    ui.init_dagster_home(home)
    steps.mark("warehouse and DAGSTER_HOME ready")

    env = ui.dagster_env(home, warehouse.path)
    env["PAIMON_OPS_OBSERVATION_INTERVAL"] = "5"
    port = free_port()
    procs: list[ui.ManagedProcess] = []
    browser = None
    try:
        procs.append(ui.ManagedProcess(
            "dagster-webserver",
            [str(ui.VENV_BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)],
            ui.REPO, env, tmp_path / "webserver.log"))
        procs.append(ui.ManagedProcess(
            "dagster-daemon", ui.daemon_argv(str(workspace)),
            ui.REPO, env, tmp_path / "daemon.log"))
        (tmp_path / "chromium").mkdir()
        browser = ui.Browser(tmp_path / "chromium", tmp_path / "chromedriver.log")
        steps.mark("webserver, daemon and Chromium started")
        yield dict(port=port, procs=procs, browser=browser, warehouse=warehouse, steps=steps, artifacts=artifacts,
                   tmp_path=tmp_path)
    finally:
        try:
            if browser is not None:
                browser.close()
        finally:
            ui.stop_all(procs)
        for p in procs:  # keep the logs with the screenshots
            shutil.copy(p.log_path, artifacts / p.log_path.name)
        steps.mark("all processes stopped")
        (artifacts / "steps.json").write_text(json.dumps(steps.marks, indent=1))


TWO_LOCATION = "two_warehouses"
TWO_WAREHOUSES_PY = """\
from dagster import Definitions

from paimon_ops.dagster import build_paimon_definitions

# two warehouses in one code location, as two named PaimonComponents build them
defs = Definitions.merge(build_paimon_definitions({east!r}, name="east"), build_paimon_definitions({west!r}, name="west"))
"""


def _workspace_with_two_warehouses(tmp_path: Path) -> Path:
    """The repository's code location (workspace.yaml's) and a second one holding two warehouses."""
    from tests.dagster.util import build_events, build_orders

    two = tmp_path / TWO_LOCATION
    for name, build in (("east", build_orders), ("west", build_events)):
        (two / name).mkdir(parents=True)
        build(str(two / name))
    (two / "defs.py").write_text(TWO_WAREHOUSES_PY.format(east=str(two / "east"), west=str(two / "west")))
    workspace = tmp_path / "workspace.yaml"
    locations = [{"python_file": {"relative_path": str(ui.REPO / "definitions.py"), "working_directory": str(ui.REPO),
                                  "location_name": LOCATION}},
                 {"python_file": {"relative_path": str(two / "defs.py"), "working_directory": str(two),
                                  "location_name": TWO_LOCATION}}]
    workspace.write_text(json.dumps({"load_from": locations}))  # JSON is YAML
    return workspace


def _two_warehouses_load(port, procs, steps, driver, shots):
    """The second code location: two warehouses, each with its own assets, jobs and sensors."""
    ui.wait_for_location(port, TWO_LOCATION, procs, timeout=90)
    for path in (["paimon", "east", "shop", "orders"], ["paimon", "west", "shop", "events"]):
        node = ui.graphql(port, ui.ASSET_QUERY, {"path": path})["assetNodeOrError"]
        assert node["__typename"] == "AssetNode", f"no asset {'/'.join(path)}: {node}"
    driver.get(f"http://127.0.0.1:{port}/locations/{TWO_LOCATION}/jobs")
    shots.take_checked("two-warehouses-jobs", {
        j: f"//*[normalize-space(text())='{j}']"
        for j in ("paimon_east_compaction", "paimon_west_compaction", "paimon_east_nightly", "paimon_west_nightly")})
    steps.mark("two warehouses loaded in one code location")


def test_table_asset_dry_run_and_tags_backfill_in_the_ui(stack):
    port, procs, steps = stack["port"], stack["procs"], stack["steps"]
    driver = stack["browser"].driver
    wh: ui.PastDaysWarehouse = stack["warehouse"]
    shots = ui.Shots(driver, stack["artifacts"], copy_to=stack["tmp_path"] / "screenshots")
    all_days = [d.isoformat() for d in wh.days]
    picked = wh.days[1:4]  # three of the five partitions; the first is tagged already, the last stays untagged

    try:
        _launch_backfill_and_check(port, procs, steps, driver, wh, shots, all_days, picked)
    except BaseException:
        try:  # what the browser showed when it failed, with the DOM, next to the other screenshots
            shots.take("failure", source=True)
        except Exception:  # noqa: BLE001
            pass
        raise


def _launch_backfill_and_check(port, procs, steps, driver, wh, shots, all_days, picked):
    want = [d.isoformat() for d in picked]
    first, last = want[0], want[-1]

    # -- the server is up, the code location loaded, the first-visit dialog dismissed
    ui.wait_for_http(port, procs, timeout=90)
    ui.wait_for_location(port, LOCATION, procs, timeout=90)
    steps.mark("code location loaded")
    node = ui.graphql(port, ui.ASSET_QUERY, {"path": ASSET_PATH})["assetNodeOrError"]
    assert node["__typename"] == "AssetNode", f"no asset {'/'.join(ASSET_PATH)} in the code location: {node}"
    assert node["isPartitioned"], "the tags asset of a table with tag.create-time must be daily-partitioned"
    assert node["partitionKeys"][:len(all_days)] == all_days, (  # (a new day may begin while the test runs)
        f"expected one partition per day from the first snapshot's day, up to yesterday: {node['partitionKeys']}")
    ui.set_nux_seen(port)

    _two_warehouses_load(port, procs, steps, driver, shots)
    _table_asset_and_dry_run(port, procs, steps, driver, wh, shots, all_days)

    backfill_id = _backfill_from_the_dialog(port, steps, driver, shots, first, last, len(picked))

    bf = ui.get_backfill(port, backfill_id)
    assert bf["isAssetBackfill"] and bf["assetSelection"] == [{"path": ASSET_PATH}], bf
    assert bf["partitionNames"] == want, bf

    # -- the daemon launches one run for the range of days (the tags' single-run backfill policy)
    bf = ui.wait_for_backfill_runs(port, backfill_id, want, all_days, procs, timeout=RUNS_TIMEOUT_S)
    covered = sorted(k for r in bf["runs"] for k in ui.run_partitions(r, all_days))
    assert covered == want, f"runs of the backfill cover {covered}, expected each of {want} once"
    assert len(bf["runs"]) == 1, f"a backfill of {len(want)} days must be one run: {bf['runs']}"
    steps.mark(f"all {len(bf['runs'])} runs succeeded")

    # -- the tags are in the table, each on the latest snapshot of its day
    from paimon_ops.table.table import FileSystemCatalog

    table = FileSystemCatalog(wh.path).get_table(ui.ORDERS)
    names = table.tags.names()
    assert names == [all_days[0], *want], f"tags after the backfill (the first existed, the last was not selected): {names}"
    for day in picked:
        assert table.tags.tag(day.isoformat()).id == wh.snapshot_for_day(day), (
            f"tag {day} is on snapshot {table.tags.tag(day.isoformat()).id}, expected the day's last snapshot "
            f"{wh.snapshot_for_day(day)} (commits: {wh.commits})")

    # -- the artefact: the backfill's runs, all succeeded, as the UI shows them
    driver.get(f"http://127.0.0.1:{port}/runs/b/{backfill_id}?tab=runs")
    ui.wait_for(driver, "the backfill's runs listed as Success",
                lambda: len(ui.visible(driver, "//*[normalize-space(text())='Success']")) >= len(bf["runs"]),
                timeout=30)
    bf = ui.wait_for_backfill_status(port, backfill_id, procs, timeout=45)
    assert bf["status"] == "COMPLETED_SUCCESS", bf
    driver.refresh()
    ui.wait_for(driver, "the backfill shown as Succeeded",
                lambda: ui.visible(driver, "//*[normalize-space(text())='Succeeded' or @data-tooltip='Succeeded']"),
                timeout=30)
    shots.take_checked("backfill-runs", {"the backfill's runs": "//*[normalize-space(text())='Success']"})

    # -- the tags asset: the existing tag and the backfilled days materialised, the last day missing
    stats = ui.graphql(port, ui.ASSET_QUERY, {"path": ASSET_PATH})["assetNodeOrError"]["partitionStats"]
    assert stats["numMaterialized"] == 1 + len(want) and stats["numFailed"] == 0, stats
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(ASSET_PATH)}?view=partitions")
    final = shots.take_checked("tags-partitions", docs="dagster-tags-partitions", expect={
        f"'Materialized ({1 + len(want)})'": f"//*[normalize-space(text())='Materialized ({1 + len(want)})']",
        "'Missing (1)'": "//*[normalize-space(text())='Missing (1)']",
        "the first (existing) day": f"//*[normalize-space(text())='{all_days[0]}']",
        "the last (missing) day": f"//*[normalize-space(text())='{all_days[-1]}']"})
    shutil.copy(final, ui.ARTIFACTS / "webserver_e2e.png")  # the artefact to keep, under a stable name
    steps.mark(f"backfill {bf['status']}; artefact {final}")
    _deleted_tag_turns_failed_and_a_backfill_refills_it(port, procs, steps, driver, wh, shots, all_days, picked[0])


def _backfill_from_the_dialog(port, steps, driver, shots, first: str, last: str, n: int, step: str = "",
                              button: str | None = None) -> str:
    """The tags asset page's Materialize dialog: a custom range (or the selection `button` makes, e.g. "Failed and
    missing"), then "Launch backfill"; the backfill's id."""
    from selenium.webdriver.common.keys import Keys

    # -- the asset page, without a first-visit dialog in the way
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(ASSET_PATH)}")
    materialize = "//button[starts-with(normalize-space(.), 'Materialize')]"
    ui.wait_for(driver, "the Materialize button", lambda: ui.visible(driver, materialize))
    assert not ui.visible(driver, DIALOG), "a dialog covers the asset page (setNuxSeen did not dismiss the NUX?)"
    shots.take(f"{step}asset-page")
    steps.mark("asset page open")

    # -- the partition dialog: a custom range of days, then "Launch backfill"
    ui.click(driver, materialize, "the Materialize button")
    ui.wait_for(driver, "the launch dialog's partition selection",
                lambda: ui.visible(driver, DIALOG + "//*[normalize-space(text())='Partition selection']"))
    if button is not None:
        ui.click(driver, DIALOG + f"//button[normalize-space(.)='{button}']", f"the '{button}' button")
    else:
        box = ui.wait_for(driver, "the partition range input",
                          lambda: ui.visible(driver, DIALOG + "//input[@type='text']")[0])
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(f"[{first}...{last}]", Keys.ENTER)
    label = f"{n} partitions" if n > 1 else "1 partition"
    ui.wait_for(driver, f"'{label}' selected",
                lambda: ui.visible(driver, DIALOG + f"//*[normalize-space(text())='{label}']"), timeout=20)
    selected = shots.take(f"{step}partitions-selected")
    if not step:  # the first backfill's dialog, its range selected (waited for above): the docs' picture of it
        ui.docs_screenshot(selected, "dagster-tags-backfill-dialog")
    ui.click(driver, DIALOG + "//button[normalize-space(.)='Launch backfill']", "the Launch backfill button")
    toast = ui.wait_for(driver, "the 'Created backfill' toast",
                        lambda: ui.visible(driver, "//*[starts-with(normalize-space(.), 'Created backfill ')]"))
    match = re.search(r"Created backfill (\S+)", toast[-1].text)
    assert match, f"toast without a backfill id: {toast[-1].text!r}"
    shots.take(f"{step}backfill-created")
    steps.mark(f"backfill {match.group(1)} launched from the UI")
    return match.group(1)


def _deleted_tag_turns_failed_and_a_backfill_refills_it(port, procs, steps, driver, wh, shots, all_days, day):
    """A tag deleted outside Dagster: the observation sensor's run of its partition fails naming it, the partition
    shows as failed (not materialised); a backfill of it from the dialog creates the tag again on its day's snapshot."""
    import paimon_ops as po
    name = day.isoformat()
    sid = wh.snapshot_for_day(day)
    po.Catalog(wh.path).get_table(ui.ORDERS).tags.delete(name).execute()  # as `paimon-ops delete-tag` would

    def stats() -> dict:
        return ui.graphql(port, ui.ASSET_QUERY, {"path": ASSET_PATH})["assetNodeOrError"]["partitionStats"]

    ui.wait_until(f"the partition of the deleted tag {name} failed", lambda: stats()["numFailed"] == 1, procs,
                  timeout=120)
    assert stats()["numMaterialized"] == len(all_days) - 2, stats()  # all but the deleted day and the last one
    steps.mark(f"deleted tag {name}: its partition failed")
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(ASSET_PATH)}?view=partitions")
    shots.take_checked("tags-partition-of-deleted-tag-failed", {
        "'Failed (1)'": "//*[normalize-space(text())='Failed (1)']",
        f"'Materialized ({len(all_days) - 2})'": f"//*[normalize-space(text())='Materialized ({len(all_days) - 2})']"})

    # the dialog's "Failed and missing": the deleted day and the day never tagged
    gaps = [name, all_days[-1]]
    backfill_id = _backfill_from_the_dialog(port, steps, driver, shots, name, name, 2, step="refill-",
                                            button="Failed and missing")
    assert ui.get_backfill(port, backfill_id)["partitionNames"] == gaps
    ui.wait_for_backfill_runs(port, backfill_id, gaps, all_days, procs, timeout=RUNS_TIMEOUT_S)
    from paimon_ops.table.table import FileSystemCatalog
    table = FileSystemCatalog(wh.path).get_table(ui.ORDERS)
    assert table.tags.tag(name).id == sid, f"tag {name} made again on snapshot {table.tags.tag(name).id}, not {sid}"
    assert table.tags.names() == all_days, table.tags.names()
    ui.wait_until("every partition materialised", lambda: stats()["numFailed"] == 0 and (
        stats()["numMaterialized"] == len(all_days)), procs, timeout=60)
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(ASSET_PATH)}?view=partitions")
    shots.take_checked("tags-partitions-refilled", {
        f"'Materialized ({len(all_days)})'": f"//*[normalize-space(text())='Materialized ({len(all_days)})']",
        "'Failed (0)'": "//*[normalize-space(text())='Failed (0)']"})
    steps.mark(f"backfill of the failed and missing partitions refilled {name} on snapshot {sid}")


def _table_asset_and_dry_run(port, procs, steps, driver, wh, shots, all_days):
    """The table asset: a dry-run compaction launched as the launchpad would records an observation and no
    materialisation; then the observation sensor observes the table and syncs its history (its latest writer
    commit, the tag made outside Dagster); the page shows schema, row count, plots and checks."""
    node = ui.graphql(port, ui.ASSET_QUERY, {"path": TABLE_PATH})["assetNodeOrError"]
    assert node["__typename"] == "AssetNode" and not node["isPartitioned"], node
    run_id = ui.launch_run(port, LOCATION, "paimon_compaction", TABLE_PATH,  # the op of the primary-key tables
                           {"ops": {"paimon_primary_key_tables": {"config": {"dry_run": True,
                                                                             "compact": {"mode": "full"}}}}})
    run = ui.wait_for_run(port, run_id, procs, timeout=120)
    assert not any(t["key"] == "paimon/operations" for t in run["tags"]), run["tags"]  # its config decides
    # each job's launchpad offers exactly its operation's knobs, with their defaults and docs
    scaffold, fields = ui.launchpad(port, LOCATION, "paimon_compaction")
    assert "compact:" in scaffold and "mode: minor" in scaffold, scaffold
    assert {"compact", "mode", "partitions", "buckets", "where"} <= set(fields) and "retain_min" not in fields
    scaffold, fields = ui.launchpad(port, LOCATION, "paimon_expire_snapshots")
    assert {"expire_snapshots", "retain_min", "retain_max", "older_than", "min_age", "max_deletes"} <= set(fields)
    assert "compact" not in fields and "mode" not in fields and "compact:" not in scaffold, sorted(fields)
    assert "snapshot.num-retained.min" in fields["retain_min"]["description"], fields["retain_min"]
    steps.mark("dry-run compaction succeeded")

    def table_events():
        return ui.graphql(port, ui.ASSET_EVENTS_QUERY, {"path": TABLE_PATH})["assetOrError"]

    events = table_events()
    assert events["assetMaterializations"] == [], "a dry run must not materialise the table"
    (dry,) = events["assetObservations"]
    assert dry["runId"] == run_id and "dry run of compact" in dry["description"], dry
    labels = {m["label"] for m in dry["metadataEntries"]}
    assert {"would_delete", "compact/would_delete", "dagster/row_count"} <= labels and "files_deleted" not in labels

    def text(t: str) -> str:
        return f"//*[normalize-space(text())='{t}']"

    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(TABLE_PATH)}")
    shots.take_checked("table-after-dry-run", docs="dagster-table-asset", expect={
        "'Never materialized'": text("Never materialized"), "'Row count'": text("Row count"),
        "'Columns'": text("Columns"), "column id": text("id"), "column amount": text("amount"),
        "type BIGINT": text("BIGINT"), "'Latest check results'": text("Latest check results"),
        "kind paimon": text("paimon")})
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(TABLE_PATH)}?view=events")
    shots.take_checked("table-events-dry-run", {"the dry run's observation": text("Observed"),
                                                "its description": text(f"dry run of compact of {ui.ORDERS}")})

    # the observation sensor: the table observed without a run, its history synced
    ui.start_sensor(port, LOCATION, "paimon_observation_sensor")
    ui.wait_until("a runless observation of the table", lambda: [
        o for o in table_events()["assetObservations"] if not o["runId"]], procs, timeout=90)
    ui.wait_until("the existing tag's partition materialised", lambda: (ui.graphql(
        port, ui.ASSET_QUERY, {"path": ASSET_PATH})["assetNodeOrError"]["partitionStats"]["numMaterialized"] == 1),
        procs, timeout=90)
    synced = ui.graphql(port, ui.ASSET_EVENTS_QUERY, {"path": ASSET_PATH})["assetOrError"]["assetMaterializations"]
    assert [m["partition"] for m in synced] == [all_days[0]] and not synced[0]["runId"], synced
    table_mats = table_events()["assetMaterializations"]
    assert len(table_mats) == 1 and not table_mats[0]["runId"], table_mats  # the latest writer commit, synced
    steps.mark("observation sensor observed the table and synced its history")

    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(TABLE_PATH)}")
    ui.wait_for(driver, "the synced materialisation", lambda: not ui.visible(driver, text("Never materialized")))
    ui.click(driver, "//button[normalize-space(.)='Plots']", "the metadata Plots toggle")
    plots = {k: text(k) for k in ("bytes", "files", "level0_files", "snapshots", "tags", "dv_ratio",
                                  "bytes_reclaimed_total", "compact/would_delete")}
    ui.wait_for(driver, "the plots", lambda: visible_or_scrolled(driver, plots["bytes"]))
    shots.take_checked("table-plots", plots, docs="dagster-table-plots")
    assert len(driver.find_elements("xpath", "//canvas")) >= len(plots), "one chart per plotted key"
    driver.get(f"http://127.0.0.1:{port}/assets/{'/'.join(TABLE_PATH)}?view=checks")
    shots.take_checked("table-checks", {n: text(n) for n in (
        "metadata_readable", "small_files", "snapshot_retention", "referenced_files_present")}, docs="dagster-table-checks")
    steps.mark("table asset page: schema, row count, plots, checks, events")
    _compaction_shows_its_work(port, procs, steps, driver, shots, table_events)


def _compaction_shows_its_work(port, procs, steps, driver, shots, table_events):
    """A real compaction run logs its plan (tasks, bytes, where it runs and why) before the work and progress while
    it runs, in order, and its run page shows them; the plan is also an observation on the table."""
    run_id = ui.launch_run(port, LOCATION, "paimon_compaction", TABLE_PATH,
                           {"ops": {"paimon_primary_key_tables": {"config": {"compact": {"mode": "full"}}}}})
    ui.wait_for_run(port, run_id, procs, timeout=120)
    events = ui.graphql(port, ui.RUN_LOGS_QUERY, {"runId": run_id})["logsForRun"]["events"]
    messages = [e.get("message") or "" for e in events if e["__typename"] == "LogMessageEvent"]
    prefix = f"compaction on {ui.ORDERS}: "
    planned = [i for i, m in enumerate(messages) if m.startswith(prefix) and "planned on snapshot" in m]
    progress = [i for i, m in enumerate(messages) if re.match(re.escape(prefix) + r"\d+/\d+ \(\d+%\)", m)]
    done = [i for i, m in enumerate(messages) if m.startswith(f"compact on {ui.ORDERS}: wrote ")]
    assert planned and progress and done, messages
    assert planned[0] < progress[0] <= progress[-1] < done[0], messages
    assert "task(s) reading" in messages[planned[0]] and "runs in-process" in messages[planned[0]], messages[planned[0]]
    assert re.search(r"(\d+)/\1 \(100%\)", messages[progress[-1]]), messages[progress[-1]]
    plan_obs = [o for o in table_events()["assetObservations"] if o["runId"] == run_id
                and "plan/tasks" in {m["label"] for m in o["metadataEntries"]}]
    assert plan_obs, "the plan recorded as an observation on the table"
    driver.get(f"http://127.0.0.1:{port}/runs/{run_id}")
    box = ui.wait_for(driver, "the run log's filter", lambda: ui.visible(driver, "//input[starts-with(@placeholder, "
                                                                                 "'Filter')]")[0])
    box.send_keys(f"on {ui.ORDERS}: ")  # the run's own lines: plan, progress, report
    shots.take_checked("compaction-run-plan-and-progress", docs="dagster-run-plan-progress", expect={
        "the plan": f"//*[starts-with(normalize-space(text()), '{prefix}planned on snapshot')]",
        "the progress": f"//*[starts-with(normalize-space(text()), '{messages[progress[-1]][:len(prefix) + 12]}')]",
        "the report line": f"//*[starts-with(normalize-space(text()), 'compact on {ui.ORDERS}: wrote ')]"})
    steps.mark("compaction run: plan and progress in the run log")
    _long_compaction_seen_while_running(port, procs, steps, driver, shots)
    _launchpads(port, steps, driver, shots)


def _long_compaction_seen_while_running(port, procs, steps, driver, shots):
    """A compaction of 2 M rows in 16 tasks: its run page, while the run is still going, shows the plan and the
    first progress lines (the screenshot is taken mid-run: the run is asked for its status right after it)."""
    run_id = ui.launch_run(port, LOCATION, "paimon_compaction", ["paimon", *ui.BIG.split(".")],
                           {"ops": {"paimon_primary_key_tables": {"config": {"compact": {"mode": "full"}}}}})
    prefix = f"compaction on {ui.BIG}: "

    def messages() -> list[str]:
        events = ui.graphql(port, ui.RUN_LOGS_QUERY, {"runId": run_id})["logsForRun"].get("events") or []
        return [e.get("message") or "" for e in events if e["__typename"] == "LogMessageEvent"]

    # the page is open (and following the run's events live) before the run worker has started
    driver.get(f"http://127.0.0.1:{port}/runs/{run_id}")
    box = ui.wait_for(driver, "the run log's filter", lambda: ui.visible(driver, "//input[starts-with(@placeholder, "
                                                                                 "'Filter')]")[0])
    box.send_keys(f"on {ui.BIG}: ")
    ui.wait_for(driver, "a progress line", lambda: ui.visible(
        driver, f"//*[starts-with(normalize-space(text()), '{prefix}') and contains(text(), '%)')]"), timeout=120,
        poll=0.1)
    shot = shots.take("long-compaction-mid-run")
    mid_run = shot
    status = ui.graphql(port, ui.RUN_QUERY, {"runId": run_id})["runOrError"]["status"]
    done = [m for m in messages() if m.startswith(f"compact on {ui.BIG}: wrote ")]
    assert status == "STARTED" and not done, (
        f"the screenshot {shot} was to be taken while the run was going; it is {status} (report {done})")
    progress = [m for m in messages() if re.match(re.escape(prefix) + r"\d+/16 \(\d+%\)", m)]
    assert progress and not progress[-1].startswith(prefix + "16/16"), progress
    ui.docs_screenshot(mid_run, "dagster-run-mid-run")  # checked: taken while the run was going
    steps.mark(f"long compaction seen mid-run ({progress[-1]})")
    ui.wait_for_run(port, run_id, procs, timeout=300)
    steps.mark("long compaction succeeded")


def _launchpads(port, steps, driver, shots):
    """Each maintenance job's launchpad: with the cursor in the op's `config:`, the config panel lists exactly the
    job's operation section (with its doc) beside dry_run — no other operation's knobs."""
    for job, section, foreign in (("paimon_compaction", "compact", "expire_snapshots"),
                                  ("paimon_expire_snapshots", "expire_snapshots", "compact")):
        driver.get(f"http://127.0.0.1:{port}/locations/{LOCATION}/jobs/{job}/playground")
        line = "//pre[contains(@class, 'CodeMirror-line')][contains(., 'dry_run')]"
        ui.click(driver, line, f"the dry_run line of the {job} launchpad's editor")

        def key(name: str) -> str:
            return f"//span[contains(@class, 'ConfigTypeSchema_dictKey') and normalize-space(text())='{name}']"

        ui.wait_for(driver, f"{section} in the config panel", lambda section=section: ui.visible(driver, key(section)))
        assert ui.visible(driver, key("dry_run")) and not driver.find_elements("xpath", key(foreign)), (
            f"{job}'s launchpad offers {foreign}")
        shots.take_checked(f"launchpad-{job}", {f"the {section} section": key(section), "dry_run": key("dry_run")})
    steps.mark("launchpads: each job's own knobs")


def visible_or_scrolled(driver, xpath: str):
    """The element, scrolled into view (the plots sit below the fold)."""
    els = driver.find_elements("xpath", xpath)
    if els:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", els[0])
    return ui.visible(driver, xpath)
