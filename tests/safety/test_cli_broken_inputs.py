"""Every command of the CLI, given broken inputs — wrong flags, bad values, missing or damaged
tables, malformed plans, unreachable or unsupported stores — answers with exactly one line on stderr naming what is
wrong, exit status 2, never a traceback, and changes nothing. Run in-process (the real `main`, stderr captured) for
speed; a few cases run as real subprocesses, where a traceback or a hang would show as the interpreter prints it."""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from paimon_ops.cli import main
from tests.cli.conftest import cli
from tests.safety.util import digest_changes, exact_digest, partitioned_table

T = "shop.orders"


@pytest.fixture(scope="module")
def wh(sample_src, tmp_path_factory):  # noqa: F811 - the fixture
    """A copy of the sample warehouse plus a damaged table (corrupt latest snapshot) and a few plan files."""
    root = tmp_path_factory.mktemp("broken-cli")
    dst = root / "wh"
    shutil.copytree(sample_src, dst, symlinks=True)
    shutil.copytree(dst / "shop.db" / "orders", dst / "shop.db" / "broken", symlinks=True)
    snap = dst / "shop.db" / "broken" / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in snap.glob("snapshot-*"))
    (snap / f"snapshot-{latest}").write_text("{ not json")
    # a table one of whose live data files is garbage: the compaction task reading it fails
    from paimon_ops.table.scan import TableScanner
    bad = partitioned_table(str(dst), "shop.badfile")
    victim = TableScanner(bad).scan(bad.snapshots.latest()).files[0]
    with open(victim.path, "r+b") as f:
        f.write(b"garbage" * 20)
    (root / "junk.json").write_text('{"hello": 1}')
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    plan = {"format": "paimon-ops-plan/1", "operation": "expire_snapshots", "table": 5, "location": [],
            "steps": "all", "preconditions": {"kind": 1}}
    (root / "types.json").write_text(json.dumps(plan))
    (root / "nested.json").write_text(json.dumps({**plan, "table": T, "location": str(dst),
                                                  "steps": [{"name": "x", "action": "delete-files",
                                                             "files": [{"path": {"a": [1, [2]]}, "kind": "data",
                                                                        "reason": "r"}]}]}))
    (root / "notutf8.json").write_bytes(b"\xff\xfe{")
    return dst


def _cases(wh) -> list[tuple[str, list[str], str]]:
    """(id, argv, words the one line must contain)."""
    w, root = str(wh), str(wh.parent)
    missing = os.path.join(root, "no-such-warehouse")
    out: list[tuple[str, list[str], str]] = []
    table_commands = ["snapshots", "tags", "files", "options", "compact", "expire-snapshots", "expire-tags",
                      "expire-partitions", "compact-manifests", "remove-orphans", "auto-tag", "rollback",
                      "compact-postpone", "rescale", "repair", "remove-unexisting-files", "rewrite-file-index",
                      "branches", "consumers", "clear-consumers", "expire-changelogs", "mark-partition-done"]
    for c in table_commands:
        extra = {"rollback": ["--snapshot", "1", "--yes"], "expire-partitions": ["--expiration-time", "1 d"],
                 "mark-partition-done": ["--partition", "dt=2020-01-01"]}.get(c, [])
        out.append((f"{c}-no-warehouse", [c, missing, T, *extra], "no-such-warehouse"))
        out.append((f"{c}-no-table", [c, w, "shop.nope", *extra], "shop.nope"))
        out.append((f"{c}-bad-identifier", [c, w, "nodot", *extra], "nodot"))
        out.append((f"{c}-unknown-flag", [c, w, T, "--bogus", *extra], "--bogus"))
        # (these never read the damaged snapshot; postpone compaction and rescale refuse a fixed-bucket table first)
        if c not in ("tags", "options", "expire-tags", "rollback", "compact-postpone", "rescale", "branches",
                     "consumers", "clear-consumers", "mark-partition-done"):
            out.append((f"{c}-damaged-table", [c, w, "shop.broken", *extra], "snapshot-"))
    damaged = max(int(p.name.split("-")[1]) for p in (wh / "shop.db" / "broken" / "snapshot").glob("snapshot-*"))
    out.append(("compact-postpone-not-postpone", ["compact-postpone", w, T], "bucket"))
    out.append(("rollback-to-damaged", ["rollback", w, "shop.broken", "--snapshot", str(damaged), "--yes"],
                f"snapshot-{damaged}"))
    for c, args in (("create-tag", ["v1"]), ("delete-tag", ["t"]), ("rename-tag", ["a", "b"]),
                    ("create-branch", ["b1"]), ("delete-branch", ["b1"]), ("rename-branch", ["a", "b"]),
                    ("fast-forward", ["b1", "--yes"]), ("reset-consumer", ["c", "--snapshot", "1"]),
                    ("create-tag-from-timestamp", ["t", "--timestamp", "2026-01-01T00:00:00Z"]),
                    ("create-tag-from-watermark", ["t", "--watermark", "2026-01-01T00:00:00Z"]),
                    ("replace-tag", ["t", "--snapshot", "1"])):
        out.append((f"{c}-no-warehouse", [c, missing, T, *args], "no-such-warehouse"))
        out.append((f"{c}-no-table", [c, w, "shop.nope", *args], "shop.nope"))
        out.append((f"{c}-unknown-flag", [c, w, T, *args, "--bogus"], "--bogus"))
    out += [
        ("no-command", [], "command"),
        ("unknown-command", ["compactt", w, T], "did you mean compact"),
        ("missing-table-arg", ["compact", w], "table"),
        ("misspelt-flag", ["compact", w, T, "--ordr-by", "x"], "did you mean --order-by"),
        ("bad-choice", ["compact", w, T, "--mode", "fulll"], "did you mean full"),
        ("bad-int", ["rollback", w, T, "--snapshot", "abc"], "--snapshot"),
        ("tables-no-warehouse", ["tables", missing], "no-such-warehouse"),
        ("tables-unknown-scheme", ["tables", "foo://bucket/wh"], "unsupported URI scheme"),
        ("tables-gs", ["tables", "gs://bucket/wh"], "Google Cloud Storage"),
        ("tables-abfs", ["tables", "abfs://c@acct.dfs.core.windows.net/wh"], "Azure"),
        ("tables-bad-endpoint", ["tables", "s3://bucket/wh", "-o", "s3.endpoint=not a url"], "s3.endpoint"),
        ("tables-bad-option-syntax", ["tables", w, "-o", "novalue"], "--option"),
        ("compact-order-by-full", ["compact", w, T, "--mode", "full", "--order-by", "id"], "--order-by"),
        ("compact-task-fails", ["compact", w, "shop.badfile", "--local", "--json"], "failed in 1 of"),
        ("compact-bad-threshold", ["compact", w, T, "--mode", "dv-ratio", "--threshold", "2"], "--threshold"),
        ("compact-bad-partition", ["compact", w, T, "--partition", "nokv"], "--partition"),
        ("compact-empty-partition-key", ["compact", w, T, "--partition", "=x"], "--partition '=x'"),
        ("compact-unknown-partition-key", ["compact", w, T, "--partition", "nokey=1"], "--partition nokey=1:"),
        ("compact-partition-key-twice", ["compact", w, T, "--partition", "dt=2024-01-01,dt=2024-01-02"],
         "--partition 'dt=2024-01-01,dt=2024-01-02': key 'dt' is given twice"),
        ("compact-bad-partition-value", ["compact", w, T, "--partition", "dt=someday"], "--partition dt=someday:"),
        ("rescale-empty-partition-key", ["rescale", w, T, "--partition", "=x"], "--partition"),
        ("compact-bad-where", ["compact", w, T, "--where", "dt >>> (("], "--where"),
        ("compact-postpone-bad-partition", ["compact-postpone", w, T, "--partition", "nokv"], "--partition"),
        ("rescale-bad-partition", ["rescale", w, T, "--partition", "nokv"], "--partition"),
        ("compact-bad-master", ["compact", w, T, "--spark-master", "not-a-master://x"], "--spark-master"),
        ("compact-bad-remote", ["compact", w, T, "--spark-remote", "http://x"], "--spark-remote"),
        ("compact-bad-timeout", ["compact", w, T, "--spark-master", "spark://127.0.0.1:1", "--connect-timeout",
                                 "-1"], "--connect-timeout"),
        ("expire-retain-min-0", ["expire-snapshots", w, T, "--retain-min", "0"], "--retain-min"),
        ("expire-max-deletes-0", ["expire-snapshots", w, T, "--max-deletes", "0"], "--max-deletes"),
        ("expire-age-as-instant", ["expire-snapshots", w, T, "--older-than", "3 d"], "--min-age"),
        ("expire-bad-age", ["expire-snapshots", w, T, "--min-age", "soon"], "--min-age"),
        ("expire-huge-age", ["expire-snapshots", w, T, "--min-age", "9999999999999 d"], "--min-age"),
        ("expire-tags-bad-instant", ["expire-tags", w, T, "--older-than", "yesterday"], "--older-than"),
        ("expire-partitions-bad-age", ["expire-partitions", w, T, "--expiration-time", "x"], "--expiration-time"),
        ("expire-partitions-max-0", ["expire-partitions", w, T, "--expiration-time", "1 d", "--max-expires", "0"],
         "--max-expires"),
        ("orphans-min-age-0", ["remove-orphans", w, T, "--min-age", "0"], "--allow-short"),
        ("orphans-huge-age", ["remove-orphans", w, T, "--min-age", "9999999999999 d"], "--min-age"),
        ("orphans-future", ["remove-orphans", w, T, "--older-than", "2999-01-01T00:00:00Z"], "--older-than"),
        ("create-tag-empty", ["create-tag", w, T, " "], "tag name"),
        ("create-tag-numeric", ["create-tag", w, T, "123"], "numeric"),
        ("create-tag-no-snapshot", ["create-tag", w, T, "v1", "--snapshot", "999"], "999"),
        ("create-tag-bad-ts", ["create-tag", w, T, "v1", "--timestamp", "noon"], "--timestamp"),
        ("create-tag-bad-retention", ["create-tag", w, T, "v1", "--time-retained", "forever"], "--time-retained"),
        ("delete-tag-unknown", ["delete-tag", w, T, "nosuch"], "nosuch"),
        ("rename-tag-unknown", ["rename-tag", w, T, "nosuch", "new"], "nosuch"),
        ("auto-tag-bad-period", ["auto-tag", w, T, "--period", "someday"], "--period: 'someday'"),
        ("auto-tag-path-period", ["auto-tag", w, T, "--period", "../../snapshot/snapshot-1"], "--period"),
        ("auto-tag-empty-period", ["auto-tag", w, T, "--period", ""], "--period"),
        # a table without automatic tagging: a period is refused, never ignored ("nothing to run", exit 0)
        ("auto-tag-unconfigured-period", ["auto-tag", w, "shop.badfile", "--period", "someday"], "--period someday"),
        ("auto-tag-unconfigured-path-period", ["auto-tag", w, "shop.badfile", "--period", "../../snapshot/snapshot-1"],
         "--period ../../snapshot/snapshot-1"),
        ("create-tag-from-timestamp-bad-instant", ["create-tag-from-timestamp", w, T, "t", "--timestamp", "noon"],
         "--timestamp"),
        ("create-tag-from-watermark-bad-instant", ["create-tag-from-watermark", w, T, "t", "--watermark", "noon"],
         "--watermark"),
        ("replace-tag-unknown", ["replace-tag", w, T, "nosuch", "--snapshot", "1"], "nosuch"),
        ("mark-partition-done-bad-partition", ["mark-partition-done", w, T, "--partition", "nokv"], "--partition"),
        ("mark-partition-done-bad-action", ["mark-partition-done", w, T, "--partition", "dt=2026-01-01", "--actions",
                                            "bogus"], "bogus"),
        ("expire-changelogs-retain-min-0", ["expire-changelogs", w, T, "--retain-min", "0"], "--retain-min"),
        ("rollback-no-target", ["rollback", w, T], "--snapshot"),
        ("rollback-unknown-snapshot", ["rollback", w, T, "--snapshot", "999", "--yes"], "999"),
        ("rollback-unknown-tag", ["rollback", w, T, "--tag", "nosuch", "--yes"], "nosuch"),
        ("rollback-needs-yes", ["rollback", w, T, "--snapshot", "1"], "--yes"),
        ("apply-missing", ["apply", os.path.join(root, "missing.json")], "missing.json"),
        ("apply-junk", ["apply", os.path.join(root, "junk.json")], "not a paimon-ops plan"),
        ("apply-deep", ["apply", os.path.join(root, "deep.json")], "deep.json"),
        ("apply-types", ["apply", os.path.join(root, "types.json")], "types.json"),
        ("apply-nested", ["apply", os.path.join(root, "nested.json")], "nested.json"),
        ("apply-not-utf8", ["apply", os.path.join(root, "notutf8.json")], "notutf8.json"),
        ("create-branch-path", ["create-branch", w, T, "../x"], "'../x' must be a plain name"),
        ("create-branch-main", ["create-branch", w, T, "main"], "main branch"),
        ("create-branch-unknown-tag", ["create-branch", w, T, "b1", "--tag", "nosuch"], "nosuch"),
        ("create-branch-tag-and-snapshot", ["create-branch", w, T, "b1", "--tag", "t", "--snapshot", "1"], "--tag"),
        ("delete-branch-unknown", ["delete-branch", w, T, "nosuch"], "branch 'nosuch' of shop.orders does not exist"),
        ("fast-forward-unknown", ["fast-forward", w, T, "nosuch", "--yes"], "nosuch"),
        ("branch-identifier-unknown", ["expire-snapshots", w, f"{T}$branch_nosuch"], "nosuch"),
        ("branch-identifier-system-table", ["files", w, f"{T}$files"], "system tables"),
        ("reset-consumer-unknown", ["reset-consumer", w, T, "ghost", "--delete"], "consumer 'ghost' does not exist"),
        ("reset-consumer-no-target", ["reset-consumer", w, T, "ghost"], "--snapshot"),
        ("clear-consumers-bad-regex", ["clear-consumers", w, T, "--excluding", "[z"], "--excluding"),
        ("sample-over-a-directory", ["sample", root], root),
        ("sample-bad-rounds", ["sample", os.path.join(root, "s2"), "--rounds", "x"], "--rounds"),
    ]
    return out


def test_every_command_answers_broken_input_in_one_line(wh, capsys):
    # every path (a journal directory included) and every file's bytes and modification time; directory times may
    # move where a compaction task found a bad data file after other tasks wrote (their output is removed)
    before = exact_digest(str(wh), dir_times=False)
    seen: set[str] = set()
    failures = []
    for name, argv, words in _cases(wh):
        if argv:
            seen.add(argv[0])
        started = time.time()
        code = main(argv)
        out, err = capsys.readouterr()
        lines = err.splitlines()
        ok = code == 2 and len(lines) == 1 and lines[0].startswith("paimon-ops: error:") and \
            words in lines[0] and "Traceback" not in err and time.time() - started < 30
        if not ok:
            failures.append(f"{name}: exit {code}, stderr {err!r}")
    assert not failures, "\n".join(failures)
    assert digest_changes(before, exact_digest(str(wh), dir_times=False)) == []  # nothing changed, anywhere
    import argparse

    from paimon_ops.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert seen >= set(sub.choices), f"commands never tried: {set(sub.choices) - seen}"


@pytest.mark.parametrize("argv,words", [
    (["compact", "{wh}", "shop.broken", "--json"], "snapshot-"),
    (["apply", "{root}/deep.json"], "deep.json"),
    (["tables", "gs://bucket/wh"], "Google Cloud Storage"),
    (["compact", "{wh}", T, "--ordr-by", "x"], "did you mean --order-by"),
])
def test_the_real_command_line_too(wh, argv, words):
    """As users run it: a subprocess, where an uncaught exception would print a traceback and a hang would time
    out; `--json` adds the error as JSON on stdout and still one line on stderr."""
    argv = [a.format(wh=wh, root=wh.parent) for a in argv]
    r = cli(*argv, timeout=60)
    assert r.code == 2, r.err
    assert len(r.err.splitlines()) == 1 and "Traceback" not in r.err and words in r.err, r.err
    if "--json" in argv:
        assert json.loads(r.out)["error"]["message"]


def _set_option(t, key: str, value: str) -> None:
    p = os.path.join(t.root, "schema", "schema-0")
    with open(p) as f:
        d = json.load(f)
    d["options"][key] = value
    with open(p, "w") as f:
        json.dump(d, f)


def _live_file(t):
    from paimon_ops.table.scan import TableScanner
    return TableScanner(t).scan(t.snapshots.latest()).files[0]


def _garbage_data_file(t) -> None:
    with open(_live_file(t).path, "r+b") as f:
        f.write(b"garbage" * 20)  # the footer is intact: only reading the pages finds it


def _bucket_dir_is_a_file(t) -> None:
    d = os.path.dirname(_live_file(t).path)
    shutil.rmtree(d)
    with open(d, "w") as f:
        f.write("not a directory")


def _data_file_is_a_link(t) -> None:
    p = _live_file(t).path
    os.replace(p, p + ".moved")
    os.symlink(p + ".moved", p)


def _unknown_schema_of_files(t) -> None:
    from paimon_ops.table.scan import TableScanner
    from tests.safety.util import rewrite_avro
    scanner = TableScanner(t)
    for m in scanner.store.manifest_list(t.snapshots.latest().delta_manifest_list, "test"):
        rewrite_avro(os.path.join(t.manifest_dir, m.file_name), lambda r: r["_FILE"].__setitem__("_SCHEMA_ID", 9))


def _unknown_schema_of_snapshot(t) -> None:
    p = t.snapshots.path(t.snapshots.latest_id())
    with open(p) as f:
        d = json.load(f)
    d["schemaId"] = 9
    with open(p, "w") as f:
        json.dump(d, f)


# (damage, words of the one line, whether directory times stay too)
REFUSED_COMPACTIONS = {
    # found by the task reading it (its footer is fine), after other tasks wrote: their output is removed, so every
    # path and every file is as it was — only the directories they wrote into have a new modification time
    "garbage-data-file": (_garbage_data_file, "cannot read data file", False),
    "zstd-level": (lambda t: _set_option(t, "file.compression.zstd-level", "x"), "'file.compression.zstd-level'", True),
    "page-size": (lambda t: _set_option(t, "parquet.page.size", "huge"), "'parquet.page.size'", True),
    "stats-mode": (lambda t: _set_option(t, "metadata.stats-mode", "most"), "'metadata.stats-mode'", True),
    "file-prefix": (lambda t: _set_option(t, "data-file.prefix", "../x-"), "'data-file.prefix'", True),
    "relative-external-path": (lambda t: (_set_option(t, "data-file.external-paths", "relative/dir"),
                                          _set_option(t, "data-file.external-paths.strategy", "round-robin")),
                               "'data-file.external-paths'", True),
    "external-path-in-table": (lambda t: (_set_option(t, "data-file.external-paths", "file:" + t.root + "/ext"),
                                          _set_option(t, "data-file.external-paths.strategy", "round-robin")),
                               "'data-file.external-paths'", True),
    "specific-fs-unset": (lambda t: (_set_option(t, "data-file.external-paths", "file:/tmp/elsewhere"),
                                     _set_option(t, "data-file.external-paths.strategy", "specific-fs")),
                          "'data-file.external-paths.specific-fs'", True),
    "unknown-schema-of-files": (_unknown_schema_of_files, "schema 9, which does not exist", True),
    "unknown-schema-of-snapshot": (_unknown_schema_of_snapshot, "names schema 9", True),
    # (found by the compaction's input check, or first by the history check when the newest commit added the file)
    "bucket-dir-is-a-file": (_bucket_dir_is_a_file, ("is not a directory", "does not exist (a lost file"), True),
    "missing-data-file": (lambda t: os.remove(_live_file(t).path), "does not exist", True),
    "data-file-is-a-link": (_data_file_is_a_link, "symbolic link", True),
}


@pytest.mark.parametrize("case", sorted(REFUSED_COMPACTIONS))
def test_a_refused_compaction_leaves_the_table_exactly_as_it_was(tmp_path, capsys, case):
    """A compaction refused for what it finds in the table — a bad data file, an option value only the writer or
    the commit reads, a schema that does not exist, a bucket directory that is a file — says so in one line naming
    the file or option (exit 2) and leaves every path, size, modification time and byte of the table as they were:
    no journal directory, no output, nothing half-written. The checks run before the first write."""
    damage, words, dir_times = REFUSED_COMPACTIONS[case]
    wh = str(tmp_path / "wh")
    t = partitioned_table(wh, "db.t")
    damage(t)
    time.sleep(0.01)  # (a write now would show as a new modification time)
    before = exact_digest(t.root, dir_times)
    code = main(["compact", wh, "db.t", "--local", "--json"])  # (--json: no progress lines on stderr)
    err = capsys.readouterr().err
    words = (words,) if isinstance(words, str) else words
    assert code == 2 and len(err.splitlines()) == 1 and any(w in err for w in words) and "Traceback" not in err, err
    assert digest_changes(before, exact_digest(t.root, dir_times)) == []
    assert not os.path.exists(os.path.join(os.getcwd(), "relative"))  # (a relative external path is never used)
