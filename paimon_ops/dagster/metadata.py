"""Engine plans, reports and table figures turned into Dagster metadata: numbers to chart over time and small
markdown tables a person would rather look at than read. Real runs use `files_deleted` / `bytes_deleted` …; dry
runs only ever `would_*` keys."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from dagster import MetadataValue

from paimon_ops.execution.plan import count_by_kind, human_bytes, removal_code, split_details
from paimon_ops.execution.report import Report

MAX_FILES_LISTED = 20


def _cell(v: Any) -> str:
    text = f"{v:.3f}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub-flavoured markdown table; `align` one char per column ('l' or 'r')."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def report_line(report: Report) -> str:
    """One line for the run log, effects first: what was written and deleted / replaced, then where it ran."""
    what = []
    if report.written:
        what.append("wrote " + ", ".join(f"{n} {k} ({human_bytes(report.written_bytes.get(k, 0))})"
                                         for k, n in sorted(report.written.items())))
    if report.deleted:
        what.append(f"{report.deleted_words} " + ", ".join(
            f"{n} {k} ({human_bytes(report.deleted_bytes.get(k, 0))})" for k, n in sorted(report.deleted.items())))
    return (f"{report.operation} on {report.table}: " + ("; ".join(what) or "nothing written or deleted")
            + (f" — committed snapshot {report.snapshot_id}" if report.snapshot_id else "")
            + f" in {report.duration_s:.2f} s" + (f", ran {report.runner['where']}" if report.runner else "")
            + "".join(f"; warning: {w}" for w in report.warnings))


def report_markdown(report: Report) -> str:
    """What the operation wrote and deleted / replaced first (by kind, sizes human-readable), then the figures a
    person reads; internals (per-task ids, settings, lists) are in the JSON entry `<operation>/details`."""
    title = f"**{report.operation}** on `{report.table}`" + (" (dry run)" if report.dry_run else "") + \
        f" — {report.duration_s:.2f} s" + (f", committed snapshot {report.snapshot_id}" if report.snapshot_id else "")
    kinds = sorted(set(report.deleted) | set(report.written))
    parts = [title, ""]
    if kinds:
        words = report.deleted_words  # the same words as the CLI's report ("replaced …" for compaction)
        rows = [(k, report.written.get(k, 0), human_bytes(report.written_bytes.get(k, 0)),
                 report.deleted.get(k, 0), human_bytes(report.deleted_bytes.get(k, 0))) for k in kinds]
        rows.append(("**total**", sum(report.written.values()), human_bytes(sum(report.written_bytes.values())),
                     report.total_deleted, human_bytes(report.total_deleted_bytes)))
        header = words if report.dry_run else removal_code(report.deleted_as)  # one word; what it means below
        parts.append(md_table(["kind", "written", "size", header, "size"], rows))
        if report.deleted and words != header:
            parts.append(f"\n_{words}_")
    else:
        parts.append("Nothing written or deleted.")
    if report.warnings:
        parts += ["", *[f"- ⚠ {w}" for w in report.warnings]]
    if report.runner:
        parts += ["", f"Ran {report.runner['where']}: {report.runner['why']}."]
    shown, _ = split_details(report.details)
    if shown:
        parts += ["", md_table(["figure", "value"], shown, "lr")]
    if report.files:
        listed = report.files[:MAX_FILES_LISTED]
        parts += ["", md_table(["file", "kind", "reason", "size"], [
            (f.path.rsplit("/", 1)[-1], f.kind, f.reason, human_bytes(f.size or 0)) for f in listed], "lllr")]
        if len(report.files) > len(listed):
            parts.append(f"\n… and {len(report.files) - len(listed)} more")
    return "\n".join(parts)


def report_metadata(report: Report, prefix: str = "") -> dict[str, Any]:
    """Chartable figures of one executed report (a real run): files / bytes written and deleted, by kind."""
    md: dict[str, Any] = {
        f"{prefix}duration_s": MetadataValue.float(float(report.duration_s)),
        f"{prefix}files_written": MetadataValue.int(sum(report.written.values())),
        f"{prefix}bytes_written": MetadataValue.int(sum(report.written_bytes.values())),
        f"{prefix}files_deleted": MetadataValue.int(report.total_deleted),
        f"{prefix}bytes_deleted": MetadataValue.int(report.total_deleted_bytes),
    }
    for k, n in sorted(report.written.items()):
        md[f"{prefix}written/{k}"] = MetadataValue.int(n)
    for k, n in sorted(report.deleted.items()):
        md[f"{prefix}deleted/{k}"] = MetadataValue.int(n)
    if report.snapshot_id is not None:
        md[f"{prefix}committed_snapshot"] = MetadataValue.int(report.snapshot_id)
    if report.runner:  # where the work ran (in-process / Spark …) and why: the placement decision, for review
        md[f"{prefix}ran_on"] = MetadataValue.text(str(report.runner["where"]))
        md[f"{prefix}ran_on_why"] = MetadataValue.text(str(report.runner["why"]))
    if report.details:  # everything, internals included, as JSON
        md[f"{prefix}details"] = MetadataValue.json(_jsonable(report.details))
    return md


def plan_metadata(plan: Any, prefix: str = "") -> dict[str, Any]:
    """What a dry run would do, under `would_*` keys (never the keys of a real run: nothing is plotted as done)."""
    deletes, writes = plan.deletes, plan.writes
    md: dict[str, Any] = {
        f"{prefix}would_delete": MetadataValue.int(len(deletes)),
        f"{prefix}would_delete_bytes": MetadataValue.int(sum(a.size or 0 for a in deletes)),
        f"{prefix}would_write": MetadataValue.int(len(writes)),
        f"{prefix}would_write_bytes": MetadataValue.int(sum(a.size or 0 for a in writes)),
    }
    tasks = getattr(plan, "tasks", None)
    if tasks is not None:
        md[f"{prefix}would_run_tasks"] = MetadataValue.int(len(tasks))
    for k, n in sorted(count_by_kind(deletes).items()):
        md[f"{prefix}would_delete/{k}"] = MetadataValue.int(n)
    for k, n in sorted(count_by_kind(writes).items()):
        md[f"{prefix}would_write/{k}"] = MetadataValue.int(n)
    if plan.details:
        md[f"{prefix}plan_details"] = MetadataValue.json(_jsonable(plan.details))
    return md


def plan_markdown(plan: Any) -> str:
    """A dry run for review: what the plan would write and delete (by kind, with byte totals), then the figures a
    person reads, then the files with kinds and reasons; internals are in the JSON entry `<operation>/plan_details`."""
    deletes, writes = plan.deletes, plan.writes
    parts = [f"**{plan.operation}** on `{plan.table}` (dry run, planned on snapshot {plan.base_snapshot})", ""]
    kinds = sorted(set(count_by_kind(deletes)) | set(count_by_kind(writes)))
    if kinds:
        d, w = count_by_kind(deletes), count_by_kind(writes)

        def size(actions: Iterable[Any], kind: str | None = None) -> str:
            return human_bytes(sum(a.size or 0 for a in actions if kind is None or a.kind == kind))
        rows = [(k, w.get(k, 0), size(writes, k), d.get(k, 0), size(deletes, k)) for k in kinds]
        rows.append(("**total**", len(writes), size(writes), len(deletes), size(deletes)))
        parts.append(md_table(["kind", "would write", "size", "would delete / replace", "size"], rows))
    else:
        parts.append("Nothing to do.")
    tasks = getattr(plan, "tasks", None)
    if tasks:
        parts += ["", f"{len(tasks)} compaction task(s) reading "
                      f"{human_bytes(sum(int(getattr(t, 'bytes_in', 0)) for t in tasks))}"]
    if plan.warnings:
        parts += ["", *[f"- ⚠ {w}" for w in plan.warnings]]
    shown, _ = split_details(plan.details)
    if shown:
        parts += ["", md_table(["figure", "value"], shown, "lr")]
    files = list(deletes) + list(writes)
    if files:
        listed = files[:MAX_FILES_LISTED]
        parts += ["", md_table(["file", "kind", "reason", "size"], [
            (f.path.rsplit("/", 1)[-1], f.kind, f.reason, human_bytes(f.size or 0)) for f in listed], "lllr")]
        if len(files) > len(listed):
            parts.append(f"\n… and {len(files) - len(listed)} more")
    return "\n".join(parts)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)
