"""Every maintenance command end to end through the command line, without Java: text output, --dry-run (nothing
changes, every file listed in --json with its kind and reason), --json (one parseable object), exit codes."""
from __future__ import annotations

import datetime
import time

from tests.cli.conftest import cli
from tests.safety.util import age, tree_digest

NOW = int(time.time() * 1000)


def _unchanged_by_dry_run(wh, *argv):
    before = tree_digest(str(wh))
    text = cli(*argv, "--dry-run")
    assert text.code == 0, text.err
    js = cli(*argv, "--dry-run", "--json")
    assert js.code == 0, js.err
    assert tree_digest(str(wh)) == before
    plan = js.json
    assert plan["format"] == "paimon-ops-plan/1" and plan["table"] == argv[2]
    files = [f for step in plan["steps"] for f in step["files"] + step.get("creates", [])]
    for f in files:
        assert f["path"] and f["kind"] and f["reason"]
        assert f["path"] in text.out  # the text dry run lists every file too
    plan["files"] = files
    plan["deleted"] = {}
    for step in plan["steps"]:
        if step["action"].startswith(("delete", "expire", "compaction-tasks")):
            for f in step["files"]:
                plan["deleted"][f["kind"]] = plan["deleted"].get(f["kind"], 0) + 1
    return text, plan


def test_sample(tmp_path):
    r = cli("sample", tmp_path / "s", "--rounds", "2", "--json")
    assert r.code == 0 and sorted(t["table"] for t in r.json["rows"]) == ["logs.events", "shop.customers",
                                                                         "shop.daily_sales", "shop.orders"]
    r = cli("sample", tmp_path / "s", "--rounds", "2")
    assert r.code == 0 and "sample warehouse at" in r.out  # a sample warehouse may be rebuilt
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "precious.txt").write_text("keep")
    r = cli("sample", tmp_path / "mine")
    assert r.code == 2 and "refusing to replace" in r.err
    assert (tmp_path / "mine" / "precious.txt").read_text() == "keep"


def test_compact(sample):
    text, plan = _unchanged_by_dry_run(sample, "compact", sample, "shop.orders", "--local")
    assert "compact on shop.orders" in text.out and "would replace" in text.out
    assert plan["details"]["files_in"] > 0
    r = cli("compact", sample, "shop.orders", "--local")
    assert r.code == 0 and "committed snapshot" in r.out
    # compaction takes files out of the table, it does not delete them: the text says so, JSON keeps the counts
    header = next(ln for ln in r.out.splitlines() if ln.split()[:1] == ["kind"])
    assert header.split() == ["kind", "wrote", "size", "replaced", "size"] and "deleted" not in r.out
    assert "replaced (the old files stay on disk until snapshot expiry)" in r.out
    j = cli("compact", sample, "shop.orders", "--local", "--json")
    assert j.code == 0 and j.json["snapshot_id"] is None  # nothing left to do
    assert cli("compact", sample, "shop.orders", "--mode", "nope").code == 2  # argparse: exit 2, usage


def test_expire_snapshots(sample):
    text, plan = _unchanged_by_dry_run(sample, "expire-snapshots", sample, "shop.orders", "--retain-min", "1",
                                       "--retain-max", "2", "--local")
    assert "would delete" in text.out and plan["deleted"].get("snapshot", 0) > 0
    planned = datetime.datetime.fromisoformat(plan["planned_at"].replace("Z", "+00:00"))
    assert abs(planned.timestamp() - time.time()) < 3600 and plan["details"]["settings"]["now"].endswith("Z")
    r = cli("expire-snapshots", sample, "shop.orders", "--retain-min", "1", "--retain-max", "2", "--local", "--json")
    assert r.code == 0 and r.json["dry_run"] is False and r.json["deleted"]["snapshot"] > 0
    assert 1 <= len(list((sample / "shop.db" / "orders" / "snapshot").glob("snapshot-*"))) <= 2
    assert cli("expire-snapshots", sample, "shop.orders", "--older-than", "soon").code == 2


def test_tags_create_rename_delete_expire(sample):
    assert cli("create-tag", sample, "shop.orders", "before", "--snapshot", "2", "--dry-run").code == 0
    assert not (sample / "shop.db" / "orders" / "tag" / "tag-before").exists()
    r = cli("create-tag", sample, "shop.orders", "before", "--snapshot", "2", "--json")
    assert r.code == 0 and r.json["written"] == {"tag": 1}
    assert cli("create-tag", sample, "shop.orders", "before", "--snapshot", "3").code == 2
    assert cli("create-tag", sample, "shop.orders", "before", "--snapshot", "3", "--replace").code == 0
    r = cli("rename-tag", sample, "shop.orders", "before", "after")
    assert r.code == 0 and "rename_tag" in r.out
    r = cli("tags", sample, "shop.orders", "--json")
    assert [t["name"] for t in r.json["rows"]] == ["after"] and r.json["rows"][0]["snapshot_id"] == 3
    _unchanged_by_dry_run(sample, "delete-tag", sample, "shop.orders", "after", "--local")
    assert cli("delete-tag", sample, "shop.orders", "after", "--local").code == 0
    assert cli("delete-tag", sample, "shop.orders", "after", "--local").code == 2  # gone: clear error
    assert cli("create-tag", sample, "shop.orders", "old", "--snapshot", "2", "--time-retained", "1 ms").code == 0
    time.sleep(0.01)
    text, plan = _unchanged_by_dry_run(sample, "expire-tags", sample, "shop.orders", "--local")
    assert plan["deleted"].get("tag") == 1
    r = cli("expire-tags", sample, "shop.orders", "--local", "--json")
    assert r.code == 0 and r.json["deleted"]["tag"] == 1


def test_auto_tag(sample):
    _, plan = _unchanged_by_dry_run(sample, "auto-tag", sample, "shop.orders")
    r = cli("auto-tag", sample, "shop.orders", "--json")
    assert r.code == 0
    names = [t["name"] for t in cli("tags", sample, "shop.orders", "--json").json["rows"]]
    assert names and len(names) == r.json["written"].get("tag", 0)
    assert cli("auto-tag", sample, "shop.orders", "--period", "not-a-day").code == 2


def test_remove_orphans(sample):
    table = sample / "shop.db" / "orders"
    orphan = next(table.glob("dt=*/bucket-0")) / "data-orphan-0.parquet"
    orphan.write_bytes(b"x")
    age(str(sample))
    text, plan = _unchanged_by_dry_run(sample, "remove-orphans", sample, "shop.orders", "--local")
    assert str(orphan) in {f["path"] for f in plan["files"]}
    assert str(orphan) in text.out
    r = cli("remove-orphans", sample, "shop.orders", "--local")
    assert r.code == 0 and not orphan.exists()
    assert cli("remove-orphans", sample, "shop.orders", "--min-age", "1 h").code == 2
    r = cli("remove-orphans", sample, "shop.orders", "--older-than", "1 h")
    assert r.code == 2 and "--min-age" in r.err  # an age given to an instant flag: said so, in flags
    assert cli("remove-orphans", sample, "shop.orders", "--min-age", "1 h", "--allow-short", "--local").code == 0


def test_rollback(sample):
    latest = max(int(p.name.split("-")[1]) for p in (sample / "shop.db" / "orders" / "snapshot").glob("snapshot-*"))
    _, plan = _unchanged_by_dry_run(sample, "rollback", sample, "shop.orders", "--snapshot", "2")
    assert plan["details"]["removed_snapshots"] == list(range(3, latest + 1))
    assert cli("rollback", sample, "shop.orders", "--snapshot", "2").code == 2  # needs --yes
    r = cli("rollback", sample, "shop.orders", "--snapshot", "2", "--yes", "--json")
    assert r.code == 0 and r.json["details"]["latest_after"] == 2
    assert cli("snapshots", sample, "shop.orders", "--json").json["rows"][-1]["id"] == 2
    assert cli("rollback", sample, "shop.orders", "--snapshot", "99", "--yes").code == 2


def test_apply_executes_exactly_the_reviewed_plan(sample, tmp_path):
    plan_file = tmp_path / "plan.json"
    r = cli("expire-snapshots", sample, "shop.orders", "--retain-min", "1", "--retain-max", "2", "--dry-run", "--json")
    assert r.code == 0
    plan_file.write_text(r.out)
    planned = {f["path"] for s in r.json["steps"] for f in s["files"]}
    before = set(tree_digest(str(sample)))
    a = cli("apply", plan_file, "--local", "--json")
    assert a.code == 0, a.err
    gone = {str(sample / p) for p in before - set(tree_digest(str(sample)))}
    assert gone == planned  # exactly the reviewed files, nothing else
    # applied once: a second apply is refused, saying it was applied …
    again = cli("apply", plan_file, "--local", "--json")
    assert again.code == 2 and again.json["error"]["type"] == "PlanAlreadyAppliedError", again.err
    # … and the command itself converges (nothing left to expire under the same retention)
    r = cli("expire-snapshots", sample, "shop.orders", "--retain-min", "1", "--retain-max", "2", "--json")
    assert r.code == 0 and r.json["details"]["expired_snapshots"] == []


def test_apply_refuses_a_stale_plan(sample, tmp_path):
    plan_file = tmp_path / "plan.json"
    r = cli("expire-snapshots", sample, "shop.orders", "--retain-min", "1", "--retain-max", "2", "--dry-run", "--json")
    plan_file.write_text(r.out)
    assert cli("create-tag", sample, "shop.orders", "keep", "--snapshot", "1").code == 0  # a new protector
    before = tree_digest(str(sample))
    a = cli("apply", plan_file, "--local", "--json")
    assert a.code == 2 and a.json["error"]["type"] == "StalePlanError"
    assert "tag(s) keep created" in a.json["error"]["message"]
    assert tree_digest(str(sample)) == before


def test_apply_rollback_needs_yes_and_bad_plans_are_clear(sample, tmp_path):
    plan_file = tmp_path / "rb.json"
    plan_file.write_text(cli("rollback", sample, "shop.orders", "--snapshot", "2", "--dry-run", "--json").out)
    r = cli("apply", plan_file)
    assert r.code == 2 and "--yes" in r.err
    assert cli("apply", plan_file, "--yes").code == 0
    (tmp_path / "junk.json").write_text('{"hello": 1}')
    r = cli("apply", tmp_path / "junk.json")
    assert r.code == 2 and "not a paimon-ops plan" in r.err
    r = cli("apply", tmp_path / "missing.json")
    assert r.code == 2 and "cannot read plan" in r.err


def test_every_flag_has_help():
    from paimon_ops.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sp in sub.choices.items():
        for action in sp._actions:
            if action.dest in ("help",) or action.help == "==SUPPRESS==":
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"


def test_default_path_places_a_small_compaction_in_process(sample):
    """No --local / --spark-*: the plan is small, so it runs in this process — and the report says so and why."""
    r = cli("compact", sample, "shop.daily_sales", "--json")
    assert r.code == 0, r.err
    assert r.json["runner"]["where"].startswith("in-process") and "execution.local.max-input-size" in \
        r.json["runner"]["why"]
    r = cli("expire-snapshots", sample, "shop.orders", "--json")
    assert r.code == 0 and r.json["runner"]["where"] == "in-process"
