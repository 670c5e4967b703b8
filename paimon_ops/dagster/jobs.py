"""Jobs — a constant number, whatever the number of tables: one asset job per maintenance operation of the registry
(`paimon_ops.operations`: each operation naming a `dagster_job`), the nightly job (the operations marked `nightly`, in
stage order) and an observation job, each over every table asset. A run selects the tables it maintains (sensors and
schedules select one table per run).

Each job's run config is its own: exactly its operations' knobs, with their defaults and docs, under the op of each
kind of table (`ops: {paimon_primary_key_tables: {config: {compact: {mode: full}}}}`), typed by the kind. A config
mapping (`job_config`) turns it into the tables' op config, where the sections it fills are what runs: nothing
editable (no run tag) names the operations.

| job | operations (in order) |
|---|---|
| `paimon_compaction` | compact |
| `paimon_expire_snapshots` | expire_snapshots |
| `paimon_expire_tags` | expire_tags |
| `paimon_remove_orphans` | remove_orphans |
| `paimon_expire_partitions` | expire_partitions (partitioned tables with `partition.expiration-time`, or the run's config) |
| `paimon_compact_manifests` | compact_manifests |
| `paimon_nightly` | create_tags (the due tags, before anything expires), expire_partitions, expire_snapshots, expire_tags, remove_orphans |
| `paimon_observe` | — (observe the tables and run their checks) |
"""
from __future__ import annotations

import weakref
from typing import Any, Mapping, Sequence

from dagster import AssetsDefinition, AssetSelection, ConfigMapping, Field, Permissive, Shape
from dagster._config import Noneable
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from paimon_ops.api import OPERATIONS
from paimon_ops.dagster.operations import DAGSTER_OPERATIONS
from paimon_ops.dagster.refs import DEFAULT_NAMES, Names

IMPLICIT_ASSET_JOB_NAME = "__ASSET_JOB"  # the job Dagster builds over every asset (what the asset page launches)
COMPACTION_JOB = "paimon_compaction"
NIGHTLY_JOB = "paimon_nightly"
OBSERVE_JOB = "paimon_observe"


def _jobs() -> dict[str, tuple[tuple[str, ...], str]]:
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for op in OPERATIONS.values():  # in the registry's order
        if op.dagster_job:
            out[op.dagster_job] = ((op.dagster_key,), f"{op.title.capitalize()}: {op.summary}.")
    nightly = tuple(name for name, op in DAGSTER_OPERATIONS.items() if op.nightly)
    out[NIGHTLY_JOB] = (nightly, "Nightly maintenance: " + ", ".join(DAGSTER_OPERATIONS[n].title for n in nightly)
                        + " (each where it applies to the table).")
    out[OBSERVE_JOB] = ((), "Observe the tables and run their checks (changes nothing).")
    return out


# job name -> (its operations, in run order; description)
JOBS: dict[str, tuple[tuple[str, ...], str]] = _jobs()


def job_for(operation: str) -> str:
    """The job that runs exactly `operation`."""
    return next(name for name, (ops, _) in JOBS.items() if ops == (operation,))


_PASSED_ON = ("resources", "loggers", "execution")  # run config a job passes on unchanged


def job_config(operations: Sequence[str], table_ops: Mapping[str, Any]) -> ConfigMapping:
    """The run config of a job running `operations`: per op of tables (`table_ops`: op name -> its config schema),
    `dry_run` and the operations' sections, each with its fields' defaults — mapped onto the op's config with
    exactly those sections set (what runs)."""
    ops_fields = {}
    for op_name, schema in table_ops.items():
        fields = schema.config_type.fields
        shape = {"dry_run": fields["dry_run"], "due_checks": fields["due_checks"]}
        for name in operations:
            section = fields[name]
            inner = section.config_type.inner_type if isinstance(section.config_type, Noneable) else section.config_type
            shape[name] = Field(inner, is_required=False, description=section.description)
        ops_fields[op_name] = Field(Shape({"config": Field(Shape(shape), is_required=False)}), is_required=False)
    schema = {"ops": Field(Shape(ops_fields), is_required=False),
              **{k: Field(Permissive(), is_required=False) for k in _PASSED_ON}}

    def to_op_config(given: Mapping[str, Any]) -> Mapping[str, Any]:
        out: dict[str, Any] = {k: given[k] for k in _PASSED_ON if given.get(k)}
        given_ops = given.get("ops") or {}
        # a job without operations observes (a run naming no section would do what the table needs now); a run naming
        # `due_checks` (a sensor's run of many tables) does what those signals make due, table by table, within the
        # job's operations. Only the ops the run config names: a run selecting some tables holds only their ops, and
        # an op given no config does what its job does with the default sections (table_asset.job_defaults)
        out["ops"] = {op_name: {"config": {"dry_run": bool(cfg.get("dry_run")), "observe_only": not operations,
                                           **({"due_checks": list(cfg["due_checks"])} if cfg.get("due_checks") else
                                              {name: dict(cfg.get(name) or {}) for name in operations})}}
                      for op_name in table_ops if op_name in given_ops
                      for cfg in [(given_ops.get(op_name) or {}).get("config") or {}]}
        return out

    return ConfigMapping(config_fn=to_op_config, config_schema=schema)


def build_jobs(table_assets: Sequence[AssetsDefinition], names: Names = DEFAULT_NAMES) -> list[Any]:
    """The asset jobs, one per entry of JOBS, over the multi-assets of the tables that loaded.

    Without the tables' checks (the outputs of ops of their own: Dagster resolves every job over every output of its
    ops, and 5,000 tables have 30,000 checks). A run selecting tables gets their checks added by Dagster (as the
    asset page does); a run of the whole job evaluates them in the tables' op (`table_asset.run_tables`).

    The jobs differ only in name, description and run config, so they are resolved once: Dagster resolves every asset job
    on its own (an asset graph of the job, the job's graph, its resource requirements — a quarter of a second each
    over 5,000 tables), and the others are copies of the first over the same graph (`_SharedResolution`)."""
    if not table_assets:
        return []
    selection = AssetSelection.assets(*table_assets).without_checks()
    shared = _SharedResolution()

    class _MaintenanceJob(UnresolvedAssetJobDefinition):
        def resolve(self, asset_graph: Any, default_executor_def: Any = None, resource_defs: Any = None) -> Any:
            return shared.resolve(self, asset_graph, default_executor_def, resource_defs)

    table_ops = {ad.node_def.name: ad.op.config_schema for ad in table_assets}
    return [_MaintenanceJob(name=names(name), selection=selection, description=description,
                            config=job_config(ops, table_ops))
            for name, (ops, description) in JOBS.items()]


class _SharedResolution:
    """The resolution of the first of a build's jobs over an asset graph; each other job of that build, over the same
    graph, a copy of it under its own name, description, tags and run config (Dagster's `JobDefinition._copy`, what its
    `with_*` methods use). Keyed by the asset graph, which Dagster builds once per repository."""

    def __init__(self) -> None:
        self._graph: Any = None  # weak reference to the asset graph of `_job`
        self._job: Any = None

    def resolve(self, job: UnresolvedAssetJobDefinition, asset_graph: Any, default_executor_def: Any,
                resource_defs: Any) -> Any:
        base = self._job if self._graph is not None and self._graph() is asset_graph else None
        if base is None:
            base = UnresolvedAssetJobDefinition.resolve(job, asset_graph, default_executor_def, resource_defs)
            self._graph, self._job = weakref.ref(asset_graph), base
            return base
        return base._copy(name=job.name, description=job.description, tags=job.tags, run_tags=job.run_tags,
                          metadata=job.metadata or {}, config=job.config)
