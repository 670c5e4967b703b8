"""What the ops, sensors and the schedule know about one table's definitions (`TableRef`), and how tables are
grouped into the few multi-assets that hold them (`group_by_op`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Hashable, Iterable, Optional, TypeVar

from dagster import AssetKey

from paimon_ops.dagster.spec import TableSpec


@dataclass(frozen=True)
class TableRef:
    """One table as the definitions hold it."""

    spec: TableSpec
    key: AssetKey            # the table asset
    op_name: str             # the op of the multi-asset holding the table (run config: ops: {op_name: {config: …}})
    tags_key: Optional[AssetKey] = None
    tags: Any = None         # the translator's tags (run tags of every run launched for the table)
    pool: str = ""           # the table's pool, paimon/<db>.<table> by default (claimed per table: instance.table_slot)

    @property
    def ident(self) -> str:
        return self.spec.identifier


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
