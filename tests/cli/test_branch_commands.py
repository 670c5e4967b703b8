"""Branches and consumers through the command line (subprocess, the sample warehouse): the life cycle end to end,
every existing operation on a branch named `db.t$branch_b` and over branch patterns, and bad input — an unknown
branch or consumer, a branch name that is not a plain name, fast-forward to a branch behind main, a system table —
each one line on stderr, exit 2, nothing changed (tree digest equal)."""
from __future__ import annotations

import json

import pytest

from tests.cli.conftest import cli
from tests.safety.util import tree_digest


def _ok(*argv) -> str:
    r = cli(*argv)
    assert r.code == 0, (argv, r.err)
    return r.out


def _refused(wh, *argv, match: str) -> None:
    before = tree_digest(str(wh))
    r = cli(*argv)
    assert r.code == 2, (argv, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paimon-ops: error: "), r.err
    assert match in lines[0], lines[0]
    assert r.seconds < 30
    assert tree_digest(str(wh)) == before, argv


def test_branch_life_cycle_and_operations_on_a_branch(sample):
    wh = str(sample)
    _ok("create-tag", wh, "shop.orders", "t1")
    _ok("create-branch", wh, "shop.orders", "wap", "--tag", "t1")
    _ok("create-branch", wh, "shop.orders", "scratch")
    rows = json.loads(_ok("branches", wh, "shop.orders", "--json"))["rows"]
    assert [r["branch"] for r in rows] == ["main", "scratch", "wap"] and rows[2]["tags"] == ["t1"]
    # every existing operation takes the branch as Paimon names it
    _ok("compact", wh, "shop.orders$branch_wap", "--local")
    _ok("create-tag", wh, "shop.orders$branch_wap", "audited")
    assert [t["name"] for t in json.loads(_ok("tags", wh, "shop.orders$branch_wap", "--json"))["rows"]] ==\
        ["t1", "audited"]
    plan = json.loads(_ok("expire-snapshots", wh, "shop.orders$branch_wap", "--retain-min", "1", "--dry-run",
                          "--json"))
    assert plan["branch"] == "wap" and plan["table"] == "shop.orders"
    _ok("remove-orphans", wh, "shop.orders$branch_wap", "--min-age", "1 d")
    # patterns: branches of every table matching, never main; --exclude takes the whole identifier
    env = json.loads(_ok("expire-snapshots", wh, "shop.*$branch_*", "--retain-min", "1", "--dry-run", "--json"))
    assert [t["table"] for t in env["tables"]] == ["shop.orders$branch_scratch", "shop.orders$branch_wap"]
    env = json.loads(_ok("expire-snapshots", wh, "*.*$branch_w*", "--exclude", "*$branch_scratch", "--dry-run",
                         "--json"))
    assert [t["table"] for t in env["tables"]] == ["shop.orders$branch_wap"]
    # publish: main takes the branch (it is ahead: the compaction), then the branch goes
    out = _ok("fast-forward", wh, "shop.orders", "wap", "--yes")
    assert "fast_forward on shop.orders" in out
    _ok("rename-branch", wh, "shop.orders", "scratch", "tmp")
    _ok("delete-branch", wh, "shop.orders", "wap")
    _ok("delete-branch", wh, "shop.orders", "tmp")
    assert [r["branch"] for r in json.loads(_ok("branches", wh, "shop.orders", "--json"))["rows"]] == ["main"]
    assert [t["name"] for t in json.loads(_ok("tags", wh, "shop.orders", "--json"))["rows"]] == ["t1", "audited"]
    assert "exist" in _ok("files", wh, "shop.orders", "--check")


@pytest.mark.parametrize("name,match", [
    ("../x", "branch name '../x' must be a plain name"),
    ("a/b", "branch name 'a/b' must be a plain name"),
    ("", "branch name must not be empty"),
    ("main", "branch name 'main' is the main branch"),
    ("123", "is all digits"),
])
def test_a_branch_name_that_is_not_plain_is_refused(sample, name, match):
    _refused(sample, "create-branch", sample, "shop.orders", name, match=match)


def test_unknown_branches_consumers_and_behind_branches_are_refused(sample):
    wh = str(sample)
    _ok("create-tag", wh, "shop.orders", "t1")
    _ok("create-branch", wh, "shop.orders", "old", "--tag", "t1")
    _ok("compact", wh, "shop.orders", "--local")  # main moves past the branch
    nope = "branch 'nope' of shop.orders does not exist"
    _refused(wh, "delete-branch", wh, "shop.orders", "nope", match=nope)
    _refused(wh, "fast-forward", wh, "shop.orders", "nope", "--yes", match=nope)
    _refused(wh, "rename-branch", wh, "shop.orders", "nope", "x", match=nope)
    _refused(wh, "expire-snapshots", wh, "shop.orders$branch_nope", match=nope)
    _refused(wh, "snapshots", wh, "shop.orders$branch_nope", match=nope)
    _refused(wh, "expire-snapshots", wh, "shop.orders$snapshots", match="system tables")
    _refused(wh, "fast-forward", wh, "shop.orders", "old", "--yes", match="branch 'old' is behind main of shop.orders")
    _refused(wh, "rename-branch", wh, "shop.orders", "old", "../y", match="new branch name '../y' must be a plain name")
    _refused(wh, "reset-consumer", wh, "shop.orders", "ghost", "--snapshot", "1",
             match="consumer 'ghost' does not exist on shop.orders")
    _refused(wh, "reset-consumer", wh, "shop.orders", "ghost", match="one of the arguments --snapshot --delete")
    _refused(wh, "clear-consumers", wh, "shop.orders", "--including", "(", match="--including '(' is not a regular")
    _refused(wh, "expire-snapshots", wh, "shop.*$branch_zz*", match="matches no table")
    assert "exist" in _ok("files", wh, "shop.orders$branch_old", "--check")
    snap = json.loads(_ok("snapshots", wh, "shop.orders$branch_old", "--json"))["rows"][-1]
    lst = json.loads((sample / "shop.db" / "orders" / "branch" / "branch-old" / "snapshot" / f"snapshot-{snap['id']}")
                     .read_text())["baseManifestList"]
    (sample / "shop.db" / "orders" / "manifest" / lst).rename(sample / "lost")
    _refused(wh, "files", wh, "shop.orders$branch_old", "--check", match=f"{lst}: referenced by shop.orders$branch_old")


def test_consumers_through_the_command_line(sample):
    wh = str(sample)
    d = sample / "shop.db" / "orders" / "consumer"
    d.mkdir()
    (d / "consumer-reader").write_text('{"nextSnapshot":2}')
    (d / "consumer-dead").write_text('{"nextSnapshot":1}')
    rows = json.loads(_ok("consumers", wh, "shop.orders", "--json"))["rows"]
    assert {r["consumer"]: r["next_snapshot"] for r in rows} == {"dead": 1, "reader": 2}
    dry = json.loads(_ok("clear-consumers", wh, "shop.orders", "--including", "de.*", "--dry-run", "--json"))
    assert [f["kind"] for s in dry["steps"] for f in s["files"]] == ["consumer"]
    _ok("clear-consumers", wh, "shop.orders", "--including", "de.*")
    _ok("reset-consumer", wh, "shop.orders", "reader", "--snapshot", "3")
    rows = json.loads(_ok("consumers", wh, "shop.orders", "--json"))["rows"]
    assert [(r["consumer"], r["next_snapshot"]) for r in rows] == [("reader", 3)]
    _ok("reset-consumer", wh, "shop.orders", "reader", "--delete")
    assert json.loads(_ok("consumers", wh, "shop.orders", "--json"))["rows"] == []
