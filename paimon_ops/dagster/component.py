"""`PaimonComponent`: the integration as a Dagster component, so a `dg` project adds a warehouse without Python:

    # defs/paimon/defs.yaml
    type: paimon_ops.dagster.PaimonComponent
    attributes:
      warehouse: s3://bucket/warehouse
      include: ["sales.*"]
      exclude: ["*.tmp_*"]
      spark_master: spark://spark-master:7077     # or spark_remote: sc://spark-connect:15002
      options:                                     # table options applied on top of every table's own
        snapshot.num-retained.min: "5"
      automation: true                             # start sensors, the nightly schedule and the tag automation
      translation:                                 # the table assets' attributes, as dbt / sling components take
        group_name: "lake_{{ table.database }}"    # them ({{ table }}: the TableSpec; {{ spec }}: the default spec)
        tags: {team: data-platform}

State: the component is state-backed (Dagster's `StateBackedComponent`, as dagster-dbt's is with its manifest): the
definitions are built from a description of the warehouse (every table's spec, `paimon_ops.dagster.state`), not
by reading every table at each load. `dg utils refresh-defs-state` writes it (run it on a schedule, or when tables
are added; `dg dev` refreshes it when it starts) — into the project (`LOCAL_FILESYSTEM`, the default: run it when
building the deployed image) or the instance's defs state storage (`defs_state: {management_type:
VERSIONED_STATE_STORAGE}`) — and no load reads the warehouse: not the code server, not a run worker. Never
refreshed, the component reads the warehouse at load, as a plain `build_paimon_definitions` does.

Several warehouses in one project: one component each, every one but one with a `name:` (`name: archive` gives
resources `paimon_archive` / `spark_archive`, jobs `paimon_archive_compaction` …, sensors
`paimon_archive_observation_sensor` …, default asset keys `paimon/archive/<db>/<table>`); the unnamed one keeps the
plain names.

`dg scaffold defs paimon_ops.dagster.PaimonComponent paimon --warehouse s3://bucket/warehouse` writes a defs.yaml
that validates as it is: the warehouse given, or `{{ env.PAIMON_OPS_WAREHOUSE }}` without `--warehouse`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Optional, Union

from dagster import AssetSpec, ComponentLoadContext, Definitions
from dagster.components import Model, Resolvable, Scaffolder, ScaffoldRequest, StateBackedComponent, scaffold_with
from dagster.components.component_scaffolding import scaffold_component
from dagster.components.utils.defs_state import DefsStateConfig, DefsStateConfigArgs, ResolvedDefsStateConfig
from dagster.components.utils.translation import TranslationFnResolver
from pydantic import BaseModel, Field

from paimon_ops.dagster.factory import build_paimon_definitions
from paimon_ops.dagster.refs import DEFAULT_SHARD_SIZE
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.dagster.state import write_state
from paimon_ops.dagster.translator import PaimonTranslator

OptionValue = Union[str, bool, int, float]  # YAML (and the component templating) turn "5" into 5: taken as text


def option_text(v: OptionValue) -> str:
    """Paimon option values are text; YAML booleans become 'true' / 'false' as Paimon writes them."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def options_text(d: dict[str, OptionValue]) -> dict[str, str]:
    return {k: option_text(v) for k, v in d.items()}


class PaimonScaffoldParams(BaseModel):
    warehouse: Optional[str] = Field(default=None, description="Warehouse location (default: the environment "
                                                               "variable PAIMON_OPS_WAREHOUSE, read at load)")
    automation: bool = Field(default=False, description="start the sensors and schedules by default")


class PaimonScaffolder(Scaffolder[PaimonScaffoldParams]):
    """`dg scaffold defs paimon_ops.dagster.PaimonComponent <path> [--warehouse …] [--automation]`."""

    @classmethod
    def get_scaffold_params(cls) -> type[PaimonScaffoldParams]:
        return PaimonScaffoldParams

    def scaffold(self, request: ScaffoldRequest[PaimonScaffoldParams]) -> None:
        params = request.params or PaimonScaffoldParams()
        attributes: dict[str, object] = {"warehouse": params.warehouse or "{{ env.PAIMON_OPS_WAREHOUSE }}"}
        if params.automation:
            attributes["automation"] = True
        scaffold_component(request, attributes)


class _TranslatedTables(PaimonTranslator):
    """The default translator with the component's `translation:` applied to each table asset's spec."""

    def __init__(self, fn: Callable[[AssetSpec, TableSpec], AssetSpec], name: Optional[str] = None):
        super().__init__(name=name)
        self.fn = fn

    def get_asset_spec(self, table: TableSpec) -> AssetSpec:
        return self.fn(super().get_asset_spec(table), table)


@scaffold_with(PaimonScaffolder)
class PaimonComponent(StateBackedComponent, Model, Resolvable):
    """Maintenance of every table of a Paimon warehouse: one asset per table (observed, with checks), daily tags
    assets, maintenance jobs, sensors and the nightly schedule."""

    warehouse: str = Field(description="Warehouse location: a local path, file://, s3://, gs://, hdfs://")
    catalog_options: dict[str, OptionValue] = Field(
        default_factory=dict, description="catalog options (metastore: hive | jdbc | rest, uri, lock.enabled, "
                                          "catalog-key, …) and object-store settings (s3.endpoint, …)")
    name: Optional[str] = Field(default=None, description=(
        "Needed when a project holds several Paimon components (one per warehouse): every component but one gets a "
        "name, which goes into its resource keys (paimon_<name>, spark_<name>), op / job / sensor / schedule names "
        "(paimon_<name>_compaction …) and default asset keys (paimon/<name>/<db>/<table>)"))
    include: list[str] = Field(default_factory=list, description="fnmatch patterns on db.table to maintain; "
                                                                 "db.table$branch_NAME patterns select branches")
    exclude: list[str] = Field(default_factory=list, description="fnmatch patterns on db.table to leave alone")
    spark_master: Optional[str] = Field(default=None, description="Spark master URL (default local[*])")
    spark_remote: Optional[str] = Field(default=None, description="Spark Connect remote sc://host:port (wins over master)")
    spark_placement: Literal["auto", "spark", "local"] = Field(
        default="auto", description="auto: plans within execution.local.max-input-size run in-process, larger ones "
                                    "on Spark; spark: always Spark; local: always in-process")
    spark_conf: dict[str, OptionValue] = Field(default_factory=dict, description="extra Spark conf for local sessions")
    options: dict[str, OptionValue] = Field(default_factory=dict, description="table options overriding every table's own")
    table_options: dict[str, dict[str, OptionValue]] = Field(default_factory=dict,
                                                     description="per db.table option overrides")
    automation: bool = Field(default=False, description="start sensors, the nightly schedule and the daily tag "
                                                "automation by default")
    nightly_cron: str = Field(default="0 3 * * *", description="cron of the nightly maintenance schedule")
    nightly_timezone: str = Field(default="UTC", description="time zone of nightly_cron")
    sensor_interval_seconds: int = Field(default=300, description="minimum interval of the compaction / expiry sensors")
    observation_interval_seconds: int = Field(default=60, description="minimum interval of the observation sensor")
    shard_size: int = Field(default=DEFAULT_SHARD_SIZE, ge=1, description="tables maintained in one run of the nightly "
                            "schedule or of a sensor's tick (per database; larger databases are split)")
    defs_state: ResolvedDefsStateConfig = Field(
        default_factory=DefsStateConfigArgs.local_filesystem,
        description="where the warehouse description `dg utils refresh-defs-state` writes is kept: LOCAL_FILESYSTEM "
                    "(default, in the project), VERSIONED_STATE_STORAGE (the instance's defs state storage) or "
                    "LEGACY_CODE_SERVER_SNAPSHOTS (read when the code server starts)")
    sensor_tick_budget_seconds: float = Field(default=20.0, description="time a sensor tick spends measuring tables "
                                              "before leaving the rest to its next ticks (Dagster's timeout is 60 s)")
    translation: Optional[Annotated[
        Callable[[AssetSpec, TableSpec], AssetSpec],
        TranslationFnResolver(template_vars_for_translation_fn=lambda table: {"table": table}),
    ]] = Field(default=None, description="asset attributes of each table asset (key, group_name, tags, owners, "
                                         "description, metadata, deps …), templated with {{ table }}")

    @property
    def defs_state_config(self) -> DefsStateConfig:
        return DefsStateConfig.from_args(self.defs_state, default_key=f"PaimonComponent[{self.name or self.warehouse}]")

    def _warehouse(self) -> PaimonWarehouse:
        return PaimonWarehouse(uri=self.warehouse, include=list(self.include), exclude=list(self.exclude),
                               catalog_options=options_text(self.catalog_options),
                               options_override=options_text(self.options),
                               table_options_override={t: options_text(o) for t, o in self.table_options.items()})

    def write_state_to_path(self, state_path: Path) -> None:
        write_state(self._warehouse(), state_path)

    def build_defs_from_state(self, context: ComponentLoadContext, state_path: Optional[Path]) -> Definitions:
        """From the description when there is one; without (never refreshed), from the warehouse itself."""
        translator: Any = _TranslatedTables(self.translation, self.name) if self.translation is not None else None
        return build_paimon_definitions(
            self._warehouse(), translator, name=self.name,
            state_path=str(state_path) if state_path is not None else None, shard_size=self.shard_size,
            spark_master=self.spark_master, spark_remote=self.spark_remote, spark_conf=options_text(self.spark_conf),
            spark_placement=self.spark_placement, automation_running=self.automation,
            nightly_cron=self.nightly_cron, nightly_timezone=self.nightly_timezone,
            sensor_interval_seconds=self.sensor_interval_seconds,
            observation_interval_seconds=self.observation_interval_seconds,
            sensor_tick_budget_seconds=self.sensor_tick_budget_seconds)
