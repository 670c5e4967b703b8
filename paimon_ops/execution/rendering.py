"""Plans and reports for people: sizes, the figures a person reads, plain-text tables, and a plan's listing for review
(every file with its kind and reason). Internals stay in the JSON."""
from __future__ import annotations

import datetime as _dt
import itertools
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from paimon_ops.execution.model import (
    _VERBS,
    bytes_by_kind,
    count_by_kind,
    removal_words,
)
from paimon_ops.options import format_duration

if TYPE_CHECKING:
    from paimon_ops.execution.plan import Plan

def human_bytes(n: int | float | None) -> str:
    """1.5 KiB, 12.0 MiB … for reports, the CLI and Dagster metadata."""
    size = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


# ------------------------------------------------------------------------------------ rendering for people
# Details that are bookkeeping, not figures a person reads (in the JSON only).
INTERNAL_DETAILS = frozenset({"task_pids", "merge_slices", "task_time_s", "settings", "units", "dv_ratios"})


def _detail(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v[:10])) + (f" … (+{len(v) - 10})" if len(v) > 10 else "")
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={x}" for k, x in list(v.items())[:10])
    return str(v)


def _human_detail(key: str, v: Any) -> str:
    if key.endswith("_s") and isinstance(v, (int, float)) and not isinstance(v, bool):  # a duration in seconds
        return format_duration(_dt.timedelta(seconds=v))
    if isinstance(v, bool):
        return "yes" if v else "no"
    if not isinstance(v, int):
        return _detail(v)
    sized = key.endswith(("bytes", "_bytes_in", "_size")) or key.startswith("bytes_")
    return human_bytes(v) if sized else f"{v:,}"


def split_details(details: Mapping[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """(the figures a person reads — scalars, sizes human-readable —, everything else for the JSON entry)."""
    shown: list[tuple[str, str]] = []
    rest: dict[str, Any] = {}
    for k, v in details.items():
        if v is None:  # nothing to say (the JSON keeps the null)
            continue
        if k in INTERNAL_DETAILS or isinstance(v, (list, tuple, set, Mapping)) or (isinstance(v, str) and len(v) > 200):
            rest[k] = v
        else:
            label = k[:-2] if k.endswith("_s") and isinstance(v, (int, float)) else k
            shown.append((label.replace("_", " "), _human_detail(k, v)))
    return shown, rest


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], indent: str = "  ") -> list[str]:
    """A plain-text table (columns padded, numbers and sizes right-aligned) as lines."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    right = [i > 0 and all(r[i][:1].isdigit() or r[i] == "-" for r in cells) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return indent + "  ".join(c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return [line(list(header)).rstrip()] + [line(r).rstrip() for r in cells]


def effects_rows(written: Mapping[str, int], written_bytes: Mapping[str, int], deleted: Mapping[str, int],
                 deleted_bytes: Mapping[str, int], sized_writes: bool = True) -> list[tuple[Any, ...]]:
    """Rows (kind, written, size, deleted, size) by kind plus a total row: the table every report starts with.
    `sized_writes` False (a dry run's outputs not written yet): the written size is unknown, shown as "-"."""
    kinds = sorted(set(deleted) | set(written))

    def w_size(n: int | None) -> str:
        return human_bytes(n) if sized_writes else "-"
    rows: list[tuple[Any, ...]] = [(k, written.get(k, 0), w_size(written_bytes.get(k, 0)), deleted.get(k, 0),
                                    human_bytes(deleted_bytes.get(k, 0))) for k in kinds]
    if len(kinds) > 1:
        rows.append(("total", sum(written.values()), w_size(sum(written_bytes.values())), sum(deleted.values()),
                     human_bytes(sum(deleted_bytes.values()))))
    return rows


def summary_lines(plan: Plan, limit: int | None = None, files: bool = True) -> Iterator[str]:
    """The lines of a plan's review listing, one at a time (a listing of millions of files is printed, never held
    whole): what it would write and delete by kind, the figures, what it requires, then every file with its kind and
    reason (`limit`: the first N, then how many more; `files` False: counts and bytes per kind of each step)."""
    deletes, writes = plan.deletes, plan.writes
    lines = [f"{plan.operation} on {plan.table}" + (f" (branch {plan.branch})" if plan.branch != "main" else "")
             + f", planned on snapshot {plan.base_snapshot}"]
    if deletes or writes:
        words = removal_words(plan, dry_run=True) or "would delete"
        lines += text_table(["kind", "would write", "size", words, "size"],
                            effects_rows(count_by_kind(writes), bytes_by_kind(writes), count_by_kind(deletes),
                                         bytes_by_kind(deletes), sized_writes=writes.any_sized()))
    shown_details, _ = split_details(plan.details)
    lines += [f"  {k}: {v}" for k, v in shown_details]
    shown = omitted = 0
    if plan.preconditions:
        lines.append("  requires: " + "; ".join(p.describe() for p in plan.preconditions))
    for s in plan.steps:
        if not s.files:
            continue
        verb = _VERBS.get(s.action) or ("would delete" if s.deletes else "would write" if s.writes
                                         else "would process")
        lines.append(f"  {s.name}: {verb} {len(s.files)} file(s)" + (
            f", {human_bytes(s.files.total_bytes())}" if s.files.any_sized() else ""))
        sign = "-" if s.deletes else "+" if s.writes else "~"  # "~": read or rewritten, left on disk
        if not files:
            for part, actions in (("", s.files), (" (created)", s.creates)):
                n, size = count_by_kind(actions), bytes_by_kind(actions)
                lines += [f"    {k:<15} {n[k]} file(s){part}, {human_bytes(size[k])}" for k in sorted(n)]
            continue
        listed = len(s.files) + len(s.creates)
        take = listed if limit is None else min(listed, max(0, limit - shown))
        omitted += listed - take
        shown += take
        yield from lines
        lines = []
        for sign_, a in itertools.islice(itertools.chain(((sign, a) for a in s.files),
                                                         (("+", a) for a in s.creates)), take):
            yield f"    {sign_} {a.kind:<15} {a.path}  ({a.reason})"
    if omitted:
        lines.append(f"  … and {omitted} more file(s) (--limit {limit}; --json lists every file)")
    if not deletes and not writes:
        lines.append("  nothing to do")
    elif deletes:
        lines.append(f"  total: {len(deletes)} file(s) to delete, {human_bytes(deletes.total_bytes())}"
                     + (f"; {len(writes)} to write" + (f", {human_bytes(writes.total_bytes())}"
                                                      if writes.any_sized() else "")
                        if writes else ""))
    lines += [f"  warning: {w}" for w in plan.warnings]
    yield from lines


__all__ = ["human_bytes", "split_details", "text_table", "effects_rows", "summary_lines", "INTERNAL_DETAILS",
           "bytes_by_kind", "count_by_kind"]
