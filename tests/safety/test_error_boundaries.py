"""Only the classes of paimon_ops.errors cross a module boundary: the engine words bad input where it arises (a
malformed file, a bad option value, a bad argument) as a PaimonOpsError, so the boundaries — the CLI, the Dagster and
Airflow integrations — catch PaimonOpsError (and OSError for I/O), never a bare ValueError / KeyError / ArrowInvalid.
Real CLI in-process on a copy of the sample warehouse, broken on disk."""
from __future__ import annotations

import ast
import glob
import json
import shutil
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.errors import PaimonOpsError

REPO = Path(__file__).resolve().parents[2]
BOUNDARIES = ["paimon_ops/cli.py", "paimon_ops/dagster", "paimon_ops/airflow"]
LIBRARY_ERRORS = {"ValueError", "KeyError", "ArrowInvalid", "ArrowException", "TypeError", "JSONDecodeError"}
# A boundary may catch a library error only around the standard library's own parsing of its own input (a run tag,
# a sensor cursor, a zone name, an Airflow connection's extra, a str.format pattern): calls of these and nothing else
# in the try block.
STDLIB_PARSERS = {"int", "float", "loads", "ZoneInfo", "date", "fromisoformat", "decompress", "b64decode", "decode",
                  "startswith", "get", "strip", "group", "format"}
T = "shop.orders"


def _boundary_files() -> list[Path]:
    out: list[Path] = []
    for b in BOUNDARIES:
        p = REPO / b
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return {p.id if isinstance(p, ast.Name) else p.attr if isinstance(p, ast.Attribute) else "" for p in parts}


def _called(stmts: list[ast.stmt]) -> set[str]:
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Call):
                out.add(n.func.id if isinstance(n.func, ast.Name) else n.func.attr if isinstance(n.func, ast.Attribute)
                        else "?")
    return out


def test_the_boundaries_never_catch_library_errors_around_the_engine():
    """AST: no `except` in the CLI, paimon_ops.dagster or paimon_ops.airflow names ValueError (KeyError, ArrowInvalid,
    TypeError) around anything but the standard library's parsers; `READ_ERRORS`-style tuples name none either."""
    bad = []
    for path in _boundary_files():
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Try):
                for h in node.handlers:
                    caught = _names(h.type) & LIBRARY_ERRORS
                    extra = _called(node.body) - STDLIB_PARSERS
                    if caught and extra:
                        bad.append(f"{rel}:{h.lineno} catches {sorted(caught)} around {sorted(extra)}")
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
                caught = _names(node.value) & LIBRARY_ERRORS
                if caught and "PaimonOpsError" in _names(node.value):
                    bad.append(f"{rel}:{node.lineno} an error tuple naming {sorted(caught)}")
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def broken(sample_src, tmp_path_factory):  # noqa: F811 - the fixture
    """The sample warehouse with one table per kind of damage (copies of shop.orders)."""
    wh = tmp_path_factory.mktemp("boundaries") / "wh"
    shutil.copytree(sample_src, wh, symlinks=True)
    db = wh / "shop.db"

    def copy(name: str) -> Path:
        shutil.copytree(db / "orders", db / name, symlinks=True)
        return db / name

    def edit_schema(t: Path, fn) -> None:
        p = t / "schema" / "schema-0"
        d = json.loads(p.read_text())
        fn(d)
        p.write_text(json.dumps(d))

    edit_schema(copy("badkey"), lambda d: d.__setitem__("partitionKeys", ["nope"]))
    edit_schema(copy("badpk"), lambda d: d.__setitem__("primaryKeys", ["order_id", "nope"]))
    edit_schema(copy("badopt"), lambda d: d["options"].__setitem__("snapshot.num-retained.min", "several"))
    for p in glob.glob(str(copy("badmanifest") / "manifest" / "manifest-[0-9a-f]*")):
        Path(p).write_bytes(b"Obj\x01garbage" * 10)
    (wh.parent / "notutf8.json").write_bytes(b"\xff\xfe{")
    return wh


@pytest.mark.parametrize("argv,words", [
    (["files", "{wh}", "shop.badkey"], "partition key 'nope' is not a field"),
    (["expire-partitions", "{wh}", "shop.badkey", "--expiration-time", "1 d"], "partition key 'nope'"),
    (["compact", "{wh}", "shop.badpk"], "primary key 'nope' is not a field"),
    (["expire-snapshots", "{wh}", "shop.badopt"], "snapshot.num-retained.min"),
    (["compact", "{wh}", "shop.badmanifest"], "manifest-"),
    (["remove-orphans", "{wh}", "shop.badmanifest"], "manifest-"),
    (["apply", "{root}/notutf8.json"], "not UTF-8"),
    (["compact", "{wh}", T, "--mode", "dv-ratio", "--threshold", "abc"], "--threshold"),
])
def test_bad_input_is_one_line_and_exit_2(broken, capsys, argv, words):
    code = main([a.format(wh=broken, root=broken.parent) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("paimon-ops: error:") and words in err, err


@pytest.mark.parametrize("kwargs", [
    {"mode": "dv-ratio", "threshold": "abc"}, {"mode": "dv-ratio", "threshold": [0.5]}, {"buckets": "1"},
    {"buckets": [1, "x"]}, {"partitions": 5}, {"memory_budget": "lots"}, {"memory_budget": [1]},
])
def test_bad_python_arguments_are_paimon_ops_errors(broken, kwargs):
    """The facade: a wrongly typed argument is an InvalidArgumentError naming it, not a TypeError / ValueError from
    deep inside the planner."""
    t = po.Catalog(str(broken)).get_table(T)
    with pytest.raises(PaimonOpsError, match="|".join(k for k in kwargs if k != "mode")):
        t.maintenance.compact(**kwargs)
