"""Engine plans, reports and table figures turned into Dagster metadata: numbers to chart over time and small
markdown tables a person would rather look at than read. Real runs use `files_deleted` / `bytes_deleted` …; dry
runs only ever `would_*` keys."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from dagster import MetadataValue

from paimon_ops.plan import count_by_kind, human_bytes
from paimon_ops.report import Report

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


def report_markdown(report: Report) -> str:
    title = f"**{report.operation}** on `{report.table}`" + (" (dry run)" if report.dry_run else "") + \
        f" — {report.duration_s:.2f} s" + (f", committed snapshot {report.snapshot_id}" if report.snapshot_id else "")
    kinds = sorted(set(report.deleted) | set(report.written))
    parts = [title, ""]
    if kinds:
        rows = [(k, report.written.get(k, 0), human_bytes(report.written_bytes.get(k, 0)),
                 report.deleted.get(k, 0), human_bytes(report.deleted_bytes.get(k, 0))) for k in kinds]
        rows.append(("**total**", sum(report.written.values()), human_bytes(sum(report.written_bytes.values())),
                     report.total_deleted, human_bytes(report.total_deleted_bytes)))
        words = report.deleted_words  # the same words as the CLI's report ("replaced …" for compaction)
        parts.append(md_table(["kind", "written", "written bytes", words,
                               "bytes" if report.deleted_as else f"{words} bytes"], rows))
    else:
        parts.append("Nothing written or deleted.")
    if report.details:
        parts += ["", md_table(["detail", "value"], [(k, _detail(v)) for k, v in report.details.items()], "ll")]
    if report.warnings:
        parts += ["", *[f"- ⚠ {w}" for w in report.warnings]]
    if report.files:
        shown = report.files[:MAX_FILES_LISTED]
        parts += ["", md_table(["file", "kind", "reason"], [(f.path.rsplit("/", 1)[-1], f.kind, f.reason)
                                                             for f in shown], "lll")]
        if len(report.files) > len(shown):
            parts.append(f"\n… and {len(report.files) - len(shown)} more")
    return "\n".join(parts)


def _detail(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v[:10])) + (f" … (+{len(v) - 10})" if len(v) > 10 else "")
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={x}" for k, x in list(v.items())[:10])
    return str(v)


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
    return md


def plan_markdown(plan: Any) -> str:
    """A dry run for review: what the plan would delete and write, with kinds and reasons."""
    deletes, writes = plan.deletes, plan.writes
    parts = [f"**{plan.operation}** on `{plan.table}` (dry run, planned on snapshot {plan.base_snapshot})", ""]
    kinds = sorted(set(count_by_kind(deletes)) | set(count_by_kind(writes)))
    if kinds:
        d, w = count_by_kind(deletes), count_by_kind(writes)
        parts.append(md_table(["kind", "would write", "would delete"], [(k, w.get(k, 0), d.get(k, 0)) for k in kinds]))
    else:
        parts.append("Nothing to do.")
    tasks = getattr(plan, "tasks", None)
    if tasks:
        parts += ["", f"{len(tasks)} compaction task(s)"]
    if plan.details:
        parts += ["", md_table(["detail", "value"], [(k, _detail(v)) for k, v in plan.details.items()], "ll")]
    if plan.warnings:
        parts += ["", *[f"- ⚠ {w}" for w in plan.warnings]]
    files = list(deletes) + list(writes)
    if files:
        shown = files[:MAX_FILES_LISTED]
        parts += ["", md_table(["file", "kind", "reason"], [(f.path.rsplit("/", 1)[-1], f.kind, f.reason)
                                                             for f in shown], "lll")]
        if len(files) > len(shown):
            parts.append(f"\n… and {len(files) - len(shown)} more")
    return "\n".join(parts)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)
