"""Engine reports and health figures turned into Dagster metadata: a few numbers to chart over time and a small
markdown table a person would rather look at than read."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from dagster import MetadataValue

from paimon_ops.plan import human_bytes
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
    verb = "Would delete" if report.dry_run else "Deleted"
    title = f"**{report.operation}** on `{report.table}`" + (" (dry run)" if report.dry_run else "") + \
        f" — {report.duration_s:.2f} s" + (f", committed snapshot {report.snapshot_id}" if report.snapshot_id else "")
    kinds = sorted(set(report.deleted) | set(report.written))
    parts = [title, ""]
    if kinds:
        rows = [(k, report.written.get(k, 0), human_bytes(report.written_bytes.get(k, 0)),
                 report.deleted.get(k, 0), human_bytes(report.deleted_bytes.get(k, 0))) for k in kinds]
        rows.append(("**total**", sum(report.written.values()), human_bytes(sum(report.written_bytes.values())),
                     report.total_deleted, human_bytes(report.total_deleted_bytes)))
        parts.append(md_table(["kind", "written", "written bytes", verb.lower(), f"{verb.lower()} bytes"], rows))
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


def report_metadata(report: Report, **extra: Any) -> dict[str, Any]:
    """Metadata of one materialisation: totals and per-kind figures (chartable), duration, and the summary."""
    md: dict[str, Any] = {
        "operation": report.operation,
        "dry_run": report.dry_run,
        "duration_s": MetadataValue.float(float(report.duration_s)),
        "files_written": MetadataValue.int(sum(report.written.values())),
        "bytes_written": MetadataValue.int(sum(report.written_bytes.values())),
        "files_deleted": MetadataValue.int(report.total_deleted),
        "bytes_deleted": MetadataValue.int(report.total_deleted_bytes),
        "summary": MetadataValue.md(report_markdown(report)),
    }
    for k, n in sorted(report.written.items()):
        md[f"written/{k}"] = MetadataValue.int(n)
    for k, n in sorted(report.deleted.items()):
        md[f"deleted/{k}"] = MetadataValue.int(n)
    if report.snapshot_id is not None:
        md["snapshot_id"] = MetadataValue.int(report.snapshot_id)
    if report.details:
        md["details"] = MetadataValue.json(_jsonable(report.details))
    if report.warnings:
        md["warnings"] = MetadataValue.json(list(report.warnings))
    md.update(extra)
    return md


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)
