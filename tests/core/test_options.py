"""The options catalogue (paimon_ops/options.py): every option is declared once, read only through it, validated in
one line naming the option and the table, and the docs' options reference is generated from it."""
from __future__ import annotations

import ast
import re
from datetime import timedelta
from pathlib import Path

import pytest

import paimon_ops.options as o
from paimon_ops.api import OPERATIONS
from paimon_ops.errors import InvalidOptionError
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import CATALOGUE, FIELD_OPTIONS, Options, affects_files, render_readme_tables
from tests.merge.util import schema

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "paimon_ops"
KEYS = {k for opt in CATALOGUE.values() for k in opt.keys}

# Literals equal to a key that are not an option there: (module, literal) -> why.
NOT_OPTIONS = {
    ("paimon_ops/merge/spec.py", "primary-key"): "the name of Java's FieldPrimaryKeyAgg function",
    ("paimon_ops/dagster/spec.py", "primary-key"): "a kind of table",
    ("paimon_ops/operations/compact.py", "primary-key"): "a kind of table",
}
# Modules that only write options (the demo tables' DDL, as a user spells it); they read none.
WRITERS = {"paimon_ops/sample.py"}
# Keys that are ordinary words (a JSON field `bucket`, a dict key `path`): a literal read is flagged only where an
# options mapping is read with it (`opts.get("bucket")`, `options["path"]`, `"type" in raw`).
WORDS = {k for k in KEYS if "." not in k and "-" not in k}
_OPTIONS_NAME = re.compile(r"(^|_)(opts|options|raw|schema_options|table_options)$")


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _literal_reads(path: Path, rel: str | None = None) -> list[str]:
    rel = rel or path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in KEYS and text not in WORDS and (rel, text) not in NOT_OPTIONS:
                found.append(f"{rel}:{node.lineno}: {text!r}")
            if text.startswith("fields.") or any(text.endswith("." + f.suffix) for f in FIELD_OPTIONS):
                found.append(f"{rel}:{node.lineno}: {text!r} (a per-column option: use FieldOption)")
        # single-word keys, where an options mapping is read with them
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
                and _OPTIONS_NAME.search(_name(node.func.value)) and node.args:
            key = node.args[0]
        elif isinstance(node, ast.Subscript) and _OPTIONS_NAME.search(_name(node.value)):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(_OPTIONS_NAME.search(_name(c)) for c in node.comparators):
            key = node.left
        if isinstance(key, ast.Constant) and key.value in WORDS:
            found.append(f"{rel}:{node.lineno}: {key.value!r} read from an options mapping")
    return found


def test_no_module_reads_an_option_by_a_literal():
    modules = [p for p in PACKAGE.rglob("*.py")
               if p != PACKAGE / "options.py" and p.relative_to(ROOT).as_posix() not in WRITERS]
    found = [hit for p in modules for hit in _literal_reads(p)]
    assert not found, "read these through the catalogue (paimon_ops/options.py):\n" + "\n".join(found)


def test_the_literal_check_finds_reads(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text('def f(opts, options, data):\n    return opts.get("bucket"), options["merge-engine"], '
                   '"path" in options, f"fields.{1}.aggregate-function", data["bucket"]\n')
    hits = "\n".join(_literal_reads(bad, "paimon_ops/probe.py"))
    for read in ("'bucket' read from", "'merge-engine'", "'path' read from", "per-column option"):
        assert read in hits
    assert hits.count("'bucket'") == 1  # data["bucket"] is no option read


def test_each_option_is_declared_once_with_a_default_of_its_type():
    seen: dict[str, str] = {}
    for name, value in vars(o).items():
        if isinstance(value, o.Option):
            for k in value.keys:
                if k == value.key:
                    assert k not in seen, f"{k} declared as {seen[k]} and {name}"
                    seen[k] = name
    assert set(seen) == set(CATALOGUE)
    types = {o.INT: int, o.FLOAT: float, o.BOOL: bool, o.STR: str, o.DURATION: timedelta, o.MEMORY: int,
             o.ENUM: str, o.LIST: tuple}
    for opt in CATALOGUE.values():
        assert opt.doc and opt.section in o.SECTIONS, opt.key
        if opt.default is None:
            continue
        assert isinstance(opt.default, types[opt.kind]), opt.key
        if opt.kind == o.ENUM:
            assert opt.default in opt.choices, opt.key
        # the default satisfies the option's own validation
        if opt.kind not in (o.DURATION, o.LIST):
            shown = str(opt.default).lower() if opt.kind == o.BOOL else str(opt.default)
            assert opt.parse(shown) == opt.default, opt.key


def test_paimon_defaults_where_they_are_known():
    """Spot checks against Java's CoreOptions (0.9 / 1.x / master), including where a version differs."""
    assert o.SNAPSHOT_NUM_RETAINED_MIN.default == 10 and o.SNAPSHOT_NUM_RETAINED_MAX.default == 2**31 - 1
    assert o.SNAPSHOT_TIME_RETAINED.default == timedelta(hours=1)
    assert o.SNAPSHOT_EXPIRE_LIMIT.default == 50 and ("0.9", "10") in o.SNAPSHOT_EXPIRE_LIMIT.paimon_defaults
    assert o.NUM_SORTED_RUN_COMPACTION_TRIGGER.default == 5 and o.COMPACTION_MIN_FILE_NUM.default == 5
    assert o.COMPACTION_SMALL_FILE_RATIO.default == 0.7 and o.COMPACTION_DELETE_RATIO_THRESHOLD.default == 0.2
    assert o.MERGE_ENGINE.default == "deduplicate" and "aggregation" in o.MERGE_ENGINE.choices
    assert "aggregate" not in o.MERGE_ENGINE.choices
    assert o.BUCKET.default == -1 and o.FILE_FORMAT.default == "parquet"
    assert o.PARTITION_EXPIRATION_MAX_NUM.default == 100 and o.MANIFEST_MERGE_MIN_COUNT.default == 30
    assert o.SOURCE_SPLIT_OPEN_FILE_COST.key == "source.split.open-file-cost"  # not "split.open-file-cost"
    assert Options({}).target_file_size(True) == 128 << 20 and Options({}).target_file_size(False) == 256 << 20
    # Java's defaults for old schema files
    assert o.with_schema_defaults({}, 1) == {"bucket": "1", "file.format": "orc"}
    assert o.with_schema_defaults({}, 2) == {"file.format": "orc"} and o.with_schema_defaults({}, 3) == {}


@pytest.mark.parametrize("option,value,expected", [
    (o.BUCKET, "x", "expected an integer"),
    (o.BUCKET, "0", "expected -1 (dynamic or unaware), -2 (postpone) or a positive bucket count"),
    (o.SNAPSHOT_NUM_RETAINED_MIN, "0", "apache/paimon#10088"),
    (o.SNAPSHOT_EXPIRE_LIMIT, "0", "expected at least 1"),
    (o.SNAPSHOT_TIME_RETAINED, "soon", "expected a duration"),
    (o.TARGET_FILE_SIZE, "big", "expected a memory size"),
    (o.DELETION_VECTORS_ENABLED, "yes", "expected true or false"),
    (o.MERGE_ENGINE, "aggregate", "expected one of deduplicate, partial-update, aggregation, first-row"),
    (o.MERGE_ENGINE, "partial_update", "expected one of"),
    (o.COMPACTION_DELETE_RATIO_THRESHOLD, "1.5", "expected a ratio within [0, 1]"),
    (o.COMPACTION_SMALL_FILE_RATIO, "nan", "expected a number"),
    (o.COMPACTION_SMALL_FILE_RATIO, "-inf", "expected a number"),
    (o.TAG_CREATE_INTERVAL, "36 h", "a whole number of days"),
    (o.TAG_DEFAULT_TIME_RETAINED, "0 s", "a positive duration"),
    (o.NUM_SORTED_RUN_COMPACTION_TRIGGER, "0", "expected an integer >= 1"),
    (o.SEQUENCE_FIELD_SORT_ORDER, "up", "ascending or descending"),
])
def test_a_bad_value_fails_in_one_line_naming_the_option_and_the_table(option, value, expected):
    with pytest.raises(InvalidOptionError) as e:
        Options({option.key: value}, where="table db.t").get(option)
    msg = str(e.value)
    assert "\n" not in msg and f"option {option.key!r} on table db.t" in msg and repr(value) in msg
    assert expected in msg


def test_values_parse_as_java_reads_them():
    opts = Options({"merge-engine": "AGGREGATION", "snapshot.expire.clean-empty-directories": "true",
                    "compaction.delete-ratio-threshold": "0.5", "manifest.merge-min-count": "12",
                    "sequence.field": "a, b", "tag.create-interval": "7 d", "write-buffer-size": "64 mb"})
    assert opts.get(o.MERGE_ENGINE) == "aggregation" == opts.merge_engine
    assert opts.get(o.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES) is True  # the fallback key
    assert opts.get(o.COMPACTION_DV_RATIO_THRESHOLD) == 0.5  # ours, falling back to Paimon's
    assert opts.get(o.MANIFEST_COMPACTION_TRIGGER) == 12
    assert opts.get(o.SEQUENCE_FIELD) == ("a", "b") and opts.get(o.TAG_CREATE_INTERVAL) == timedelta(days=7)
    assert opts.get(o.WRITE_BUFFER_SIZE) == 64 << 20 and opts.get(o.TAG_NUM_RETAINED_MAX) is None
    assert opts.is_set(o.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES) and not opts.is_set(o.SNAPSHOT_EXPIRE_LIMIT)
    assert opts.num_levels == 6 and Options({"num-sorted-run.compaction-trigger": "3"}).num_levels == 4
    assert opts.small_files_threshold(True) == 5
    assert Options({"compaction.min.file-num": "9"}).small_files_threshold(False) == 9
    assert Options({"compaction.small-files-threshold": "2"}).small_files_threshold(True) == 2
    # a configured 0 wins over the default where 0 means something
    assert Options({"commit.max-retries": "0"}).get(o.COMMIT_MAX_RETRIES) == 0


def test_the_merge_engine_is_parsed_once():
    """`aggregation` is Java's value (MergeEngine.AGGREGATE.toString); `aggregate` is refused everywhere."""
    fields = [("k", "INT"), ("v", "BIGINT")]
    for text in ("aggregation", "Aggregation"):
        s = schema(fields, ["k"], {"merge-engine": text, "fields.v.aggregate-function": "sum"})
        assert MergeSpec.from_schema(s, Options(s.options), "table db.t").engine == "aggregation"
    s = schema(fields, ["k"], {"merge-engine": "aggregate"})
    for read in (lambda: MergeSpec.from_schema(s, Options(s.options), "table db.t"),
                 lambda: Options(s.options, "table db.t").merge_engine):
        with pytest.raises(InvalidOptionError, match="'merge-engine' on table db.t"):
            read()


def test_file_options_a_saved_plan_may_not_override():
    """The options that decide how files are read or where they are (the executor refuses overrides of them)."""
    for key in ("bucket", "bucket-key", "merge-engine", "sequence.field", "deletion-vectors.enabled",
                "deletion-vectors.bitmap64", "changelog-producer", "primary-key", "partition", "path",
                "data-file.external-paths", "data-file.external-paths.strategy", "data-file.path-directory",
                "data-file.prefix", "changelog-file.prefix", "index-file-in-data-file-dir", "file.format",
                "partition.default-name", "partition.legacy-name", "ignore-delete", "first-row.ignore-delete",
                "partial-update.remove-record-on-delete", "aggregation.remove-record-on-delete",
                "row-tracking.enabled", "fields.v.aggregate-function"):
        assert affects_files(key), key
    for key in ("snapshot.num-retained.min", "compaction.memory-budget", "tag.create-time", "unknown"):
        assert not affects_files(key), key


def test_registry_parameters_default_from_catalogue_entries():
    linked = [(op.name, p) for op in OPERATIONS.values() for p in op.params if p.option is not None]
    assert len(linked) >= 10
    for name, p in linked:
        assert CATALOGUE[p.option.key] is p.option, (name, p.name)
        assert f"the table's {p.option.key}" in p.described
    retain_min = OPERATIONS["expire_snapshots"].param("retain_min")
    assert retain_min.described.endswith("(default: the table's snapshot.num-retained.min, else 10)")
    strategy = OPERATIONS["expire_partitions"].param("strategy")
    assert strategy.choices == o.PARTITION_EXPIRATION_STRATEGY.choices


def _options_page() -> str:
    """docs/reference/options.md as the docs build generates it (docs/hooks/reference.py)."""
    import sys
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    import reference
    return reference.options_page()


def test_options_reference_is_the_catalogue():
    page = _options_page()
    tables = render_readme_tables()
    missing = [line for line in tables.splitlines() if line.startswith("| `") and line not in page]
    assert not missing, f"the options reference page lacks catalogue rows: {missing[:3]}"
    for opt in CATALOGUE.values():  # every option the engine reads is documented, with its default
        row = next(line for line in page.splitlines() if line.startswith(f"| `{opt.key}`"))
        assert opt.default_text in row, opt.key


# Option names the documentation mentions that paimon-ops does not read (with why).
NOT_READ = {"postpone.batch-write-fixed-bucket": "how Paimon's writers fill postpone buckets"}
# The hand-written pages (the specs cite Java's own options, read or not) and the README.
_DOCUMENTED = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts and
                                            p.name not in ("format.md", "maintenance.md", "design.md"))


@pytest.mark.parametrize("page", _DOCUMENTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_option_the_docs_name_is_in_the_catalogue(page):
    prefixes = {k.split(".")[0] for k in KEYS if "." in k}
    named = set(re.findall(r"`([a-z][a-z0-9]*(?:[.-][a-zA-Z0-9]+)+)[^`]*`", page.read_text()))
    unknown = sorted(t for t in named if "." in t and t.split(".")[0] in prefixes and t not in KEYS
                     and t not in NOT_READ)
    assert not unknown, f"{page.relative_to(ROOT)} names options the catalogue does not declare: {unknown}"


def test_feature_detection_reads_java_fallback_keys_and_types():
    """Detection honours Java's fallback keys (sink.clustering.by-columns, blob.stored-descriptor-fields) and
    types: pk-clustering-override is a boolean, so 'false' declares no clustering."""
    from paimon_ops.features import CLUSTERING, MANAGED_BLOB, uses_of_schema

    def features(options: dict[str, str]) -> set[str]:
        return {u.feature.key for u in uses_of_schema(options)}

    assert CLUSTERING.key in features({"sink.clustering.by-columns": "a"})
    assert CLUSTERING.key in features({"pk-clustering-override": "true"})
    assert CLUSTERING.key not in features({"pk-clustering-override": "false"})
    assert MANAGED_BLOB.key in features({"blob.stored-descriptor-fields": "b"})
