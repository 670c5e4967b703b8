"""Record-by-record folds of one key, ported from Java master's merge functions.

PartialUpdateMergeFunction (add / updateNonNullFields / updateWithSequenceGroup / retractWithSequenceGroup /
initRow / getResult) and AggregateMergeFunction (add / initRow / getResult). They are the exact
reference; the vectorised engines route only rare groups here (documented in engines.py), never the
bulk of a compaction.
"""
from __future__ import annotations

from typing import Any, Sequence

from paimon_ops.merge.scalar import ScalarAgg, compare_nulls_first
from paimon_ops.merge.spec import MergeError, MergeSpec

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def is_retract(kind: int) -> bool:
    return kind == UPDATE_BEFORE or kind == DELETE


PU_RETRACT_MESSAGE = (
    "By default, Partial update can not accept delete records, you can choose one of the following solutions: "
    "1. Configure 'ignore-delete' to ignore delete records. "
    "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete records. "
    "3. Configure 'sequence-group's to retract partial columns.")


def init_row(spec: MergeSpec, value: Sequence[Any]) -> list[Any]:
    """initRow: a fresh row holding every field of `value`; a null in a NOT NULL field is an error.

    Java master copies all fields (apache/paimon#7645, "set all fields including nullable ones"); before that fix only the
    NOT NULL fields were copied.
    """
    for i, t in enumerate(spec.field_types):
        if not t.nullable and value[i] is None:
            raise MergeError(f"{spec.where}: field {spec.field_names[i]!r} is NOT NULL but a merged record "
                             "holds null")
    return list(value)


class PartialUpdateFold:
    def __init__(self, spec: MergeSpec) -> None:
        self.spec = spec
        n = len(spec.field_names)
        self.aggs: list[ScalarAgg | None] = [ScalarAgg(a, spec.where) if a is not None else None
                                             for a in spec.aggregators]
        self.group_of: list[int | None] = [None] * n
        self.seq_idx: list[tuple[int, ...]] = []
        for g, grp in enumerate(spec.sequence_groups):
            idx = tuple(spec.index(s) for s in grp.seq_fields)
            self.seq_idx.append(idx)
            for f in grp.value_fields + grp.seq_fields:
                self.group_of[spec.index(f)] = g
        self.has_groups = bool(spec.sequence_groups)

    def run(self, values: Sequence[Sequence[Any]], kinds: Sequence[int], seqs: Sequence[int]
            ) -> tuple[list[Any], int, int]:
        spec = self.spec
        n = len(spec.field_names)
        row: list[Any] = [None] * n
        for a in self.aggs:
            if a is not None:
                a.reset()
        meet_insert = not_null_filled = current_delete = False
        latest_seq = 0
        for value, kind, seq in zip(values, kinds, seqs):
            current_delete = False
            if is_retract(kind):
                if not not_null_filled:  # the first record is a retraction: it seeds the row (initRow)
                    row = init_row(spec, value)
                    not_null_filled = True
                if spec.ignore_delete:
                    continue
                latest_seq = seq
                if self.has_groups:
                    row, current_delete = self._retract_groups(row, value, kind)
                    continue
                if spec.pu_remove_record_on_delete:
                    if kind == DELETE:
                        current_delete = True
                        row = init_row(spec, value)
                    continue
                raise MergeError(f"{spec.where}: {PU_RETRACT_MESSAGE}")
            latest_seq = seq
            if not self.has_groups:
                for i in range(n):
                    v = value[i]
                    if v is not None:
                        row[i] = v
                    elif not spec.field_types[i].nullable:
                        raise MergeError(f"{spec.where}: field {spec.field_names[i]!r} can not be null")
            else:
                self._update_groups(row, value)
            meet_insert = True
            not_null_filled = True
        kind = DELETE if (current_delete or not meet_insert) else INSERT
        return row, latest_seq, kind

    def _empty(self, value: Sequence[Any], g: int) -> bool:
        return all(value[i] is None for i in self.seq_idx[g])

    def _update_groups(self, row: list[Any], value: Sequence[Any]) -> None:
        n = len(row)
        processed = [False] * n
        for i in range(n):
            g = self.group_of[i]
            agg = self.aggs[i]
            acc = row[i]
            if g is not None:
                if processed[i]:
                    continue
                if self._empty(value, g):
                    for j in self.seq_idx[g]:
                        processed[j] = True
                    continue
                if compare_nulls_first([value[i] for i in self.seq_idx[g]], [row[i] for i in self.seq_idx[g]]) >= 0:
                    if i in self.seq_idx[g]:
                        for j in self.seq_idx[g]:  # all sequence fields of the group move together
                            row[j] = value[j]
                            processed[j] = True
                        continue
                    row[i] = value[i] if agg is None else agg.agg(acc, value[i])
                elif agg is not None:
                    row[i] = agg.agg_reversed(acc, value[i])
            else:
                if agg is not None:
                    row[i] = agg.agg(acc, value[i])
                elif value[i] is not None:
                    row[i] = value[i]

    def _retract_groups(self, row: list[Any], value: Sequence[Any], kind: int) -> tuple[list[Any], bool]:
        spec = self.spec
        n = len(row)
        processed = [False] * n
        updated: set[int] = set()
        for i in range(n):
            g = self.group_of[i]
            if g is None:
                continue
            agg = self.aggs[i]
            if processed[i]:
                continue
            if self._empty(value, g):
                for j in self.seq_idx[g]:
                    processed[j] = True
                continue
            if compare_nulls_first([value[i] for i in self.seq_idx[g]], [row[i] for i in self.seq_idx[g]]) >= 0:
                if i in self.seq_idx[g]:
                    for j in self.seq_idx[g]:
                        if j not in updated:
                            if kind == DELETE and spec.sequence_groups[g].remove_on_delete:
                                return init_row(spec, value), True  # remove the whole row
                            row[j] = value[j]
                            updated.add(j)
                        processed[j] = True
                elif agg is None:
                    row[i] = None
                else:
                    row[i] = agg.retract(row[i], value[i])
            elif agg is not None:
                row[i] = agg.retract(row[i], value[i])
        return row, False


class AggregateFold:
    def __init__(self, spec: MergeSpec) -> None:
        self.spec = spec
        self.aggs = [ScalarAgg(a, spec.where) for a in spec.aggregators]  # type: ignore[arg-type]

    def run(self, values: Sequence[Sequence[Any]], kinds: Sequence[int], seqs: Sequence[int]
            ) -> tuple[list[Any], int, int]:
        spec = self.spec
        row: list[Any] = [None] * len(spec.field_names)
        for a in self.aggs:
            a.reset()
        current_delete = False
        for value, kind in zip(values, kinds):
            current_delete = spec.agg_remove_record_on_delete and kind == DELETE
            if current_delete:
                row = init_row(spec, value)
                continue
            retract = is_retract(kind)
            for i, a in enumerate(self.aggs):
                row[i] = a.retract(row[i], value[i]) if retract else a.agg(row[i], value[i])
        return row, seqs[-1], DELETE if current_delete else INSERT

    def run_field(self, i: int, values: Sequence[Any], kinds: Sequence[int]) -> Any:
        """One field's fold (valid when no remove-record-on-delete reset happens in the group)."""
        a = self.aggs[i]
        a.reset()
        acc = None
        for v, kind in zip(values, kinds):
            acc = a.retract(acc, v) if is_retract(kind) else a.agg(acc, v)
        return acc
