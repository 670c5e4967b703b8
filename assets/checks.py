"""Asset checks per table (metadata reads only):

* `dv_ratio` (on compaction, tables with deletion vectors): no data file's deleted-row ratio above
  `compaction.dv-ratio-threshold` (default 0.2);
* `small_files` (on compaction): per bucket, level-0 files (primary-key) / small files (append) below
  `compaction.small-files-threshold` (default `num-sorted-run.compaction-trigger` / `compaction.min.file-num`, 5);
* `latest_tag_present` (on tags; only tables with `tag.create-time` or `tag.automatic-creation`);
* `snapshot_retention` (on snapshot_expiry): the table holds no more snapshots than its retention allows
  (ERROR above `snapshot.num-retained.max`, WARN when `snapshot.expirable-threshold` snapshots are expirable);
* `referenced_files_present` (on orphan_cleanup): every file the latest snapshot and every tag reference exists;
* `loadable` (on the placeholder of a table that failed to load): fails with the load error.
"""
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetChecksDefinition,
    MetadataValue,
    asset_check,
)

from paimon_ops.errors import PaimonOpsError
from paimon_ops.plan import human_bytes
from paimon_ops.table.table import Table

from assets import health
from assets.metadata import md_table
from assets.spec import WAREHOUSE_PLACEHOLDER, TableSpec
from assets.table_assets import WAREHOUSE_KEY, engine, now_millis
from assets.translator import COMPACTION, ORPHAN_CLEANUP, SNAPSHOT_EXPIRY, TAGS, UNAVAILABLE, PaimonTranslator

MAX_ROWS = 15


READ_ERRORS = (PaimonOpsError, OSError, ValueError)  # a check reports these as a failed result, not a crash


def _table(context: AssetCheckExecutionContext, spec: TableSpec) -> Table:
    return getattr(context.resources, WAREHOUSE_KEY).get_table(spec.identifier)


def _unreadable(spec: TableSpec, e: Exception) -> AssetCheckResult:
    return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR,
                            description=f"cannot read {spec.identifier}: {type(e).__name__}: {e}",
                            metadata={"error": f"{type(e).__name__}: {e}"})


def bucket_table(h: health.FileHealth, buckets: list[health.BucketStat]) -> str:
    rows = [(b.label, b.files, h.small_count(b), b.rows, b.deleted_rows, f"{b.max_file_dv_ratio:.1%}",
             human_bytes(b.bytes)) for b in buckets[:MAX_ROWS]]
    text = md_table(["bucket", "files", h.small_files_label, "rows", "deleted rows", "worst DV ratio", "size"],
                    rows)
    if len(buckets) > MAX_ROWS:
        text += f"\n\n… and {len(buckets) - MAX_ROWS} more buckets"
    return text


# ---------------------------------------------------------------------------------------------- builders
def build_table_checks(spec: TableSpec, translator: PaimonTranslator) -> list[AssetChecksDefinition]:
    checks: list[AssetChecksDefinition] = []
    req = {WAREHOUSE_KEY}

    if spec.dv_enabled:
        @asset_check(asset=translator.get_asset_key(spec, COMPACTION), name="dv_ratio", required_resource_keys=req,
                     description=f"No data file of {spec.identifier} has a deleted-row ratio above "
                                 "compaction.dv-ratio-threshold (default 0.2).")
        def dv_ratio(context: AssetCheckExecutionContext) -> AssetCheckResult:
            try:
                h = health.measure_files(_table(context, spec))
            except READ_ERRORS as e:
                return _unreadable(spec, e)
            over = h.dv_over
            worst = sorted(h.buckets, key=lambda b: -b.max_file_dv_ratio)
            return AssetCheckResult(
                passed=not over,
                description=(f"worst file DV ratio {h.max_dv_ratio:.1%} vs threshold {h.dv_threshold:.1%}; "
                             f"{len(over)} bucket(s) over"),
                metadata={"max_file_dv_ratio": MetadataValue.float(h.max_dv_ratio),
                          "table_dv_ratio": MetadataValue.float(h.total_dv_ratio),
                          "threshold": MetadataValue.float(h.dv_threshold),
                          "buckets_over": MetadataValue.int(len(over)),
                          "snapshot_id": h.snapshot_id if h.snapshot_id is not None else "none",
                          "buckets": MetadataValue.md(bucket_table(h, worst))})
        checks.append(dv_ratio)

    @asset_check(asset=translator.get_asset_key(spec, COMPACTION), name="small_files", required_resource_keys=req,
                 description=f"Every bucket of {spec.identifier} holds fewer level-0 files (primary-key tables) or "
                             "small files (append tables) than compaction.small-files-threshold.")
    def small_files(context: AssetCheckExecutionContext) -> AssetCheckResult:
        try:
            h = health.measure_files(_table(context, spec))
        except READ_ERRORS as e:
            return _unreadable(spec, e)
        over = h.small_over
        worst = sorted(h.buckets, key=lambda b: -h.small_count(b))
        return AssetCheckResult(
            passed=not over,
            description=(f"at most {h.max_small_count} {h.small_files_label} per bucket vs threshold "
                         f"{h.small_files_threshold}; {len(over)} bucket(s) at or over"),
            metadata={"max_per_bucket": MetadataValue.int(h.max_small_count),
                      "threshold": MetadataValue.int(h.small_files_threshold),
                      "buckets_over": MetadataValue.int(len(over)),
                      "files": MetadataValue.int(h.total_files),
                      "buckets": MetadataValue.md(bucket_table(h, worst))})
    checks.append(small_files)

    if spec.has_expected_tags:
        @asset_check(asset=translator.get_asset_key(spec, TAGS), name="latest_tag_present", required_resource_keys=req,
                     description=f"The tag of the latest period that has ended exists in {spec.identifier}.")
        def latest_tag_present(context: AssetCheckExecutionContext) -> AssetCheckResult:
            try:
                table = _table(context, spec)
                name = engine("paimon_ops.lifecycle.autotag").latest_expected_tag(table, now_millis())
                names = table.tags.names()
            except READ_ERRORS as e:
                return _unreadable(spec, e)
            if name is None:
                return AssetCheckResult(passed=True, description="no tag is expected yet",
                                        metadata={"tags": MetadataValue.int(len(names))})
            present = name in names
            return AssetCheckResult(
                passed=present,
                description=f"tag {name} {'exists' if present else 'is missing: materialise (or backfill) the tags asset'}",
                metadata={"expected_tag": name, "tags": MetadataValue.int(len(names)),
                          "latest_tags": ", ".join(names[-5:]) or "none"})
        checks.append(latest_tag_present)

    @asset_check(asset=translator.get_asset_key(spec, SNAPSHOT_EXPIRY), name="snapshot_retention",
                 required_resource_keys=req,
                 description=f"{spec.identifier} holds no more snapshots than its retention options allow.")
    def snapshot_retention(context: AssetCheckExecutionContext) -> AssetCheckResult:
        try:
            r = health.measure_retention(_table(context, spec), now_millis())
        except READ_ERRORS as e:
            return _unreadable(spec, e)
        retain_max = "unlimited" if r.retain_max is None else r.retain_max
        return AssetCheckResult(
            passed=not r.over,
            severity=AssetCheckSeverity.ERROR if r.over_max else AssetCheckSeverity.WARN,
            description=(f"{r.count} snapshots (min {r.retain_min}, max {retain_max}, time {r.time_retained}); "
                         f"{r.expirable} expirable now, expiry due at {r.threshold}"),
            metadata={"snapshots": MetadataValue.int(r.count), "expirable": MetadataValue.int(r.expirable),
                      "earliest": r.earliest if r.earliest is not None else "none",
                      "latest": r.latest if r.latest is not None else "none",
                      "retained": MetadataValue.md(md_table(
                          ["option", "value"],
                          [("snapshot.num-retained.min", r.retain_min), ("snapshot.num-retained.max", retain_max),
                           ("snapshot.time-retained", str(r.time_retained)), ("snapshot.expire.limit", r.expire_limit),
                           (health.EXPIRABLE_THRESHOLD, r.threshold)], "ll"))})
    checks.append(snapshot_retention)

    @asset_check(asset=translator.get_asset_key(spec, ORPHAN_CLEANUP), name="referenced_files_present",
                 required_resource_keys=req,
                 description=f"Every file referenced by the latest snapshot and the tags of {spec.identifier} "
                             "exists: manifest lists, manifests, data, index and statistics files.")
    def referenced_files_present(context: AssetCheckExecutionContext) -> AssetCheckResult:
        try:
            p = health.missing_files(_table(context, spec))
        except READ_ERRORS as e:
            return _unreadable(spec, e)
        md: dict[str, Any] = {"referenced": MetadataValue.int(p.checked), "missing": MetadataValue.int(len(p.missing)),
                              "sources": ", ".join(p.sources[:20]) or "none",
                              "by_kind": MetadataValue.json(p.by_kind)}
        if p.missing:
            md["missing_files"] = MetadataValue.md(md_table(["file", "referenced by"], p.missing[:50], "ll"))
        return AssetCheckResult(
            passed=not p.missing,
            description=(f"all {p.checked} referenced files exist" if not p.missing else
                         f"{len(p.missing)} of {p.checked} referenced files are missing, e.g. {p.missing[0][0]} "
                         f"({p.missing[0][1]})"),
            metadata=md)
    checks.append(referenced_files_present)
    return checks


def build_placeholder_check(spec: TableSpec, translator: PaimonTranslator) -> AssetChecksDefinition:
    @asset_check(asset=translator.get_asset_key(spec, UNAVAILABLE), name="loadable",
                 required_resource_keys={WAREHOUSE_KEY},
                 description=f"Fails while {spec.identifier} cannot be loaded; the error says what to fix.")
    def loadable(context: AssetCheckExecutionContext) -> AssetCheckResult:
        from assets.spec import load_spec
        warehouse = getattr(context.resources, WAREHOUSE_KEY)
        try:
            if spec.identifier == WAREHOUSE_PLACEHOLDER:
                warehouse.table_identifiers()
                error = None
            else:
                error = load_spec(warehouse.get_table(spec.identifier)).error
        except (PaimonOpsError, OSError) as e:
            error = f"{type(e).__name__}: {e}"
        if error is None:
            return AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN,
                                    description=f"{spec.identifier} loads now; reload the code location to get its "
                                                f"maintenance assets (it failed at load time: {spec.error})",
                                    metadata={"load_error": spec.error or ""})
        return AssetCheckResult(passed=False, description=f"{spec.identifier} cannot be loaded: {error}",
                                metadata={"error": error, "load_error": spec.error or ""})
    return loadable
