"""What the ops, sensors and the schedule know about one table's definitions (`TableRef`), how tables are
grouped into the few multi-assets that hold them (`group_by_op`), and the names of one build's definitions
(`Names`: several warehouses in one code location)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Generic, Hashable, Iterable, Optional, TypeVar

from dagster import AssetKey

from paimon_ops.dagster.spec import TableSpec
from paimon_ops.errors import InvalidArgumentError

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")


@dataclass(frozen=True)
class Names:
    """The Dagster names (resource keys, ops, jobs, sensors, schedules) of one warehouse's definitions.

    Unnamed (the default, one warehouse per code location): the names as documented — resources `paimon` and
    `spark`, jobs `paimon_compaction` … Named `lake2` (a second `PaimonComponent` or `build_paimon_definitions(…,
    name="lake2")`): `paimon_lake2` / `spark_lake2`, `paimon_lake2_compaction`, `paimon_lake2_observation_sensor` …,
    so the definitions of several warehouses merge into one code location without clashing."""

    name: Optional[str] = None

    def __post_init__(self) -> None:
        if self.name is not None and not NAME_RE.fullmatch(self.name):
            raise InvalidArgumentError(f"name {self.name!r}: a Paimon component's name must start with a letter and "
                                       "hold only letters, digits and underscores (at most 40)")

    def __call__(self, base: str) -> str:
        """`paimon_compaction` -> `paimon_<name>_compaction`; `paimon` / `spark` -> `paimon_<name>` / `spark_<name>`."""
        if self.name is None:
            return base
        if base.startswith("paimon_"):
            return f"paimon_{self.name}_{base[len('paimon_'):]}"
        return f"{base}_{self.name}"

    @property
    def warehouse_key(self) -> str:
        return self("paimon")

    @property
    def spark_key(self) -> str:
        return self("spark")

    def resources(self, context: Any) -> tuple[Any, Any]:
        """(warehouse, spark) of an op's or a sensor's context (declared by `required_resource_keys`)."""
        return getattr(context.resources, self.warehouse_key), getattr(context.resources, self.spark_key, None)


DEFAULT_NAMES = Names()  # one warehouse per code location: the documented names



@dataclass(frozen=True)
class TableRef:
    """One table as the definitions hold it."""

    spec: TableSpec
    key: AssetKey            # the table asset
    op_name: str             # the op of the multi-asset holding the table (run config: ops: {op_name: {config: …}})
    tags_key: Optional[AssetKey] = None
    tags: Any = None         # the translator's tags (run tags of every run launched for the table)
    pool: str = ""           # the table's pool, paimon/<db>.<table> by default (claimed per table: instance.table_slot)
    shard: str = ""          # the tables maintained together (the translator's get_shard: its database by default)

    @property
    def ident(self) -> str:
        return self.spec.identifier


DEFAULT_SHARD_SIZE = 500  # tables in one run of the nightly schedule or of a sensor's tick


@dataclass(frozen=True)
class Shard:
    """Tables maintained together in one run: `name` (the shard, `#2` … when split) and its tables."""

    name: str
    refs: tuple[TableRef, ...]


def shards(refs: Iterable[TableRef], size: int = DEFAULT_SHARD_SIZE) -> list[Shard]:
    """The tables by shard (`TableRef.shard`), in first-seen order, each split into runs of at most `size` tables
    (`db0`, or `db0#1`, `db0#2` … when split)."""
    if size < 1:
        raise InvalidArgumentError(f"shard_size must be at least 1, got {size}")
    by: dict[str, list[TableRef]] = {}
    for r in refs:
        by.setdefault(r.shard or r.spec.database, []).append(r)
    out = []
    for name, members in by.items():
        parts = [members[i:i + size] for i in range(0, len(members), size)]
        for i, part in enumerate(parts):
            out.append(Shard(name if len(parts) == 1 else f"{name}#{i + 1}", tuple(part)))
    return out


T = TypeVar("T")


@dataclass(frozen=True)
class Member(Generic[T]):
    """One table's entry in a multi-asset: the op it asks for (the translator's name), the variant the op must be
    uniform in (the kind of table: its config class; the tags' partitioning) and what the multi-asset needs."""

    op_name: str
    variant: Hashable
    item: T


def group_by_op(members: Iterable[Member[T]], suffix: dict[Hashable, str]) -> dict[str, tuple[Hashable, list[T]]]:
    """op name -> (variant, items), in first-seen order. A name asked for with several variants (a translator that
    names ops per database, say, over tables of several kinds) becomes one op per variant, `<name>__<suffix>`."""
    variants: dict[str, dict[Hashable, list[T]]] = {}
    for m in members:
        variants.setdefault(m.op_name, {}).setdefault(m.variant, []).append(m.item)
    out: dict[str, tuple[Hashable, list[T]]] = {}
    for name, by_variant in variants.items():
        for variant, items in by_variant.items():
            out[name if len(by_variant) == 1 else f"{name}__{suffix[variant]}"] = (variant, items)
    return out
