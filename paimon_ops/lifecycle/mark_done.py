"""Marking partitions done: Java's `mark_partition_done` procedure with the table's `partition.mark-done-action`
(`PartitionMarkDoneAction`), each action writing exactly what Java writes so that Java's and Hive's consumers see it.

    plan_mark_partition_done(table, partitions=[{"dt": "2024-01-01"}], actions=None, now=None) -> Plan
    done_partitions(table, actions=None) -> list[DoneMark]      # what the marks say now (sensors, triggers)

A partition is given as `{key: value}` for the leading partition keys (all of them, or a prefix: `dt` of `dt,hh`
marks the day's directory); its path is Java's `PartitionPathUtils.generatePartitionPath` — `k=v/…/` in the
partition keys' order, names escaped as Hive does. The actions, in the order the option lists them (Java 0.9 runs
them in that order; later versions as a set):

* `success-file` — `<table>/<partition path>/_SUCCESS`, the JSON of Java's `SuccessFile`:
  `{"creationTime": now, "modificationTime": now}`, or, when the file exists, its creation time kept and the
  modification time moved to now (`SuccessFileMarkDoneAction`). Under the table's root, where Java writes it (not
  under `data-file.path-directory`). An existing file that is not a SuccessFile is refused, naming it.
* `done-partition` — the metastore partition `<last key>=<value>.done` (`AddDonePartitionAction`, through the
  catalog's partition registration); needs the table's Hive catalog and `metastore.partitioned-table=true`, as Java
  checks, and every partition key given.
* `mark-event` — a LOAD_DONE event of the partition in the metastore (`MarkPartitionDoneEventAction`:
  `markPartitionForEvent`, read back by `isPartitionMarkedForEvent`); the same requirements.
* `http-report` — a POST of `{"partition": path, "table": db.t, "path": table location, "params": …}` to
  `partition.mark-done-action.http.url` answered by `{"result": "SUCCESS"}` (`HttpReportMarkDoneAction`, Paimon 1.1+).
* `custom` is refused: it is a Java class.

Every requirement is checked before anything is written: an action the table's catalog cannot carry out is refused in
one line naming the option, and nothing is marked. Marking is idempotent (a rerun rewrites the same `_SUCCESS`
with a new modification time; `.done` partitions and events are added if absent).
"""
from __future__ import annotations

import json
import posixpath
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from paimon_ops.catalog import catalog_of
from paimon_ops.errors import (
    CatalogError,
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    UnreachableError,
    UnsupportedError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.plan import WRITE_FILES, FileAction, Plan, PlanBuilder, Step, declare_step_action, planner
from paimon_ops.format.partition import escape_path_name, unescape_path_name
from paimon_ops.format.snapshot import jackson_dumps
from paimon_ops.operations.mark_partition_done import OPERATION as MARK_PARTITION_DONE
from paimon_ops.operations.model import InstantMs, Partitions
from paimon_ops.options import (
    CATALOG_CONNECT_TIMEOUT,
    MARK_DONE_ACTIONS,
    METASTORE,
    METASTORE_PARTITIONED_TABLE,
    PARTITION_MARK_DONE_ACTION,
    PARTITION_MARK_DONE_ACTION_PARAMS,
    PARTITION_MARK_DONE_ACTION_URL,
    PARTITION_MARK_DONE_CUSTOM_CLASS,
)
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import iso, now_ms

SUCCESS_FILE = "_SUCCESS"  # Java's SuccessFileMarkDoneAction.SUCCESS_FILE_NAME
DONE_SUFFIX = ".done"      # AddDonePartitionAction
SUCCESS, DONE_PARTITION, MARK_EVENT, HTTP_REPORT, CUSTOM = MARK_DONE_ACTIONS
MARKER = "marker"                   # kind of a _SUCCESS file
METASTORE_PARTITION = "metastore-partition"
METASTORE_EVENT = "metastore-event"
HTTP_REQUEST = "http-report"

ADD_DONE_PARTITIONS = "add-done-partitions"
MARK_EVENTS = "mark-partition-events"
POST_REPORTS = "post-mark-done-reports"
declare_step_action(ADD_DONE_PARTITIONS, writes=True, verb="would add to the metastore")
declare_step_action(MARK_EVENTS, writes=True, verb="would report to the metastore (LOAD_DONE)")
declare_step_action(POST_REPORTS, writes=True, verb="would POST")


class MarkPartitionDonePlan(Plan):
    """Marking partitions done with the table's (or the given) mark-done actions."""

    operation = "mark_partition_done"
    op = MARK_PARTITION_DONE  # its operation (the feature gate, the planner's parameters)


# ---------------------------------------------------------------------------------------------- partitions
def partition_path(spec: Mapping[str, str]) -> str:
    """Java's PartitionPathUtils.generatePartitionPath: `k=v/k2=v2/`, escaped as Hive escapes path names."""
    return "".join(f"{escape_path_name(k)}={escape_path_name(v)}/" for k, v in spec.items())


def ordered_spec(table: FileStoreTable, given: Mapping[str, Any], full: bool = False) -> dict[str, str]:
    """`given` in the partition keys' order, checked: only partition keys, the leading ones (all of them with
    `full`), each with a value."""
    keys = list(table.schema.partition_keys)
    text = ",".join(f"{k}={v}" for k, v in given.items())
    unknown = [k for k in given if k not in keys]
    if unknown:
        raise InvalidArgumentError(f"partition {text!r} of {table.identifier}: {unknown[0]!r} is not a partition key "
                                   f"(the partition keys: {', '.join(keys)})")
    n = len(given)
    if not n or set(given) != set(keys[:n]):
        raise InvalidArgumentError(f"partition {text!r} of {table.identifier}: give the leading partition keys "
                                   f"({', '.join(keys)}), e.g. {keys[0]}=…")
    if full and n < len(keys):
        raise InvalidArgumentError(f"partition {text!r} of {table.identifier}: a metastore partition needs every "
                                   f"partition key ({', '.join(keys)})")
    out = {k: str(given[k]) for k in keys[:n]}
    empty = [k for k, v in out.items() if not v]
    if empty:
        raise InvalidArgumentError(f"partition {text!r} of {table.identifier}: {empty[0]} has no value")
    return out


def _actions(table: FileStoreTable, given: Sequence[str] | None) -> list[str]:
    """The actions to run: the given ones, else the table's `partition.mark-done-action` — each a known action;
    `custom` (a Java class) refused."""
    if given is None:
        acts = list(table.options.get(PARTITION_MARK_DONE_ACTION))  # validated: unknown ones refused naming it
    else:
        acts = [a.strip() for a in given if a.strip()]
        bad = next((a for a in acts if a not in MARK_DONE_ACTIONS), None)
        if bad is not None or not acts:
            raise InvalidArgumentError(f"{arg('actions')} {bad!r}: not a mark-done action of "
                                       f"{PARTITION_MARK_DONE_ACTION.key} ({', '.join(MARK_DONE_ACTIONS)})")
    if CUSTOM in acts:
        cls = table.options.get(PARTITION_MARK_DONE_CUSTOM_CLASS)
        raise UnsupportedError(f"{PARTITION_MARK_DONE_ACTION.key}=custom on {table.identifier} runs the Java class "
                               f"{cls or '(' + PARTITION_MARK_DONE_CUSTOM_CLASS.key + ' unset)'}; paimon-ops runs no "
                               "Java: mark its partitions with Paimon's mark_partition_done, or choose other actions")
    return list(dict.fromkeys(acts))


def _metastore(table: FileStoreTable, action: str) -> Any:
    """The table's catalog when it keeps a metastore (Hive) and the table registers its partitions there (Java's
    createPartitionModification / createPartitionMarkDone checks); refused in one line naming the option."""
    cat = catalog_of(table)
    if cat is None or not cat.syncs_metastore:
        how = "by its location" if cat is None else f"through a {cat.metastore} catalog"
        raise UnsupportedError(f"{PARTITION_MARK_DONE_ACTION.key}={action} needs the Hive Metastore of "
                               f"{table.identifier}, which was opened {how}: open it through its Hive catalog "
                               f"(catalog options {METASTORE.key}=hive and uri=thrift://HOST:PORT)")
    if not table.options.get(METASTORE_PARTITIONED_TABLE):
        raise InvalidOptionError(METASTORE_PARTITIONED_TABLE.key, table.options.raw.get(METASTORE_PARTITIONED_TABLE.key),
                                 f"true: {PARTITION_MARK_DONE_ACTION.key}={action} marks partitions the metastore "
                                 "registers", table.options.where)
    return cat


def _success_file(table: FileStoreTable, spec: Mapping[str, str], now: int) -> tuple[str, str, str]:
    """(path, content, what) of a partition's _SUCCESS file: Java's SuccessFile JSON, the existing file's creation
    time kept."""
    path = posixpath.join(table.root, partition_path(spec), SUCCESS_FILE)
    created = now
    try:
        data = table.io.read_bytes(path)
    except FileNotFoundError:
        data = None
    what = "created"
    if data is not None:
        created = read_success_file(data, path)[0]
        what = f"modification time moved (created {iso(created)})"
    return path, jackson_dumps({"creationTime": created, "modificationTime": now}), what


def read_success_file(data: bytes, path: str) -> tuple[int, int]:
    """(creationTime, modificationTime) of a _SUCCESS file (Java's SuccessFile.fromJson: unknown fields ignored)."""
    try:
        obj = json.loads(data)
        return int(obj["creationTime"]), int(obj["modificationTime"])
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptMetadataError(path, f"not a Paimon _SUCCESS file (SuccessFile JSON with creationTime and "
                                         f"modificationTime): {e}; fix or remove it") from None


# ---------------------------------------------------------------------------------------------- planning
@planner(MarkPartitionDonePlan)
def plan_mark_partition_done(table: FileStoreTable, *, partitions: Partitions | None = None,
                             actions: list[str] | None = None, now: InstantMs | None = None) -> MarkPartitionDonePlan:
    """Mark `partitions` done with `actions` (default: the table's partition.mark-done-action), see the module
    docstring. Everything an action needs is checked before the plan is made."""
    keys = list(table.schema.partition_keys)
    if not keys:
        raise InvalidArgumentError(f"{table.identifier} is not partitioned: it has no partition to mark done")
    if not partitions:
        raise InvalidArgumentError(f"give the partitions to mark done: {arg('partitions')} {keys[0]}=…")
    acts = _actions(table, actions)
    metastore = any(a in (DONE_PARTITION, MARK_EVENT) for a in acts)
    specs = list({partition_path(s): s for s in (ordered_spec(table, p, full=metastore) for p in partitions)}.values())
    cat: Any = None
    for a in acts:
        if a in (DONE_PARTITION, MARK_EVENT):
            cat = _metastore(table, a)
    url = table.options.get(PARTITION_MARK_DONE_ACTION_URL)
    if HTTP_REPORT in acts and not url:
        raise InvalidOptionError(PARTITION_MARK_DONE_ACTION_URL.key, None, f"the URL the {HTTP_REPORT} action POSTs "
                                 "to", table.options.where)
    at = now_ms(now)
    b = PlanBuilder()
    for s in specs:
        if not table.io.exists(posixpath.join(table.data_root, partition_path(s))):
            b.warn(f"partition {partition_path(s).rstrip('/')} of {table.identifier} has no directory (no data yet); "
                   "it is marked done all the same, as Java does")
    ident = table.identifier.split("$", 1)[0]
    for a in acts:
        if a == SUCCESS:
            files = [_success_file(table, s, at) for s in specs]
            b.step("_SUCCESS files", WRITE_FILES, contents=[c for _, c, _ in files], mode="overwrite")
            for path, _, what in files:
                b.add(FileAction(path, MARKER, f"partition done at {iso(at)} (Java's SuccessFile; {what})"))
        elif a == DONE_PARTITION:
            done = [{**s, keys[-1]: s[keys[-1]] + DONE_SUFFIX} for s in specs]
            b.step(".done partitions", ADD_DONE_PARTITIONS, partitions=done)
            for d in done:
                b.add(FileAction(f"{cat.endpoint}/{ident}/{partition_path(d).rstrip('/')}", METASTORE_PARTITION,
                                 "the partition's done partition (Java's AddDonePartitionAction)"))
        elif a == MARK_EVENT:
            b.step("LOAD_DONE events", MARK_EVENTS, partitions=specs)
            for s in specs:
                b.add(FileAction(f"{cat.endpoint}/{ident}/{partition_path(s).rstrip('/')}", METASTORE_EVENT,
                                 "LOAD_DONE event of the partition (Java's MarkPartitionDoneEventAction)"))
        elif a == HTTP_REPORT:
            b.step("mark-done reports", POST_REPORTS, url=url, partitions=[partition_path(s) for s in specs])
            for s in specs:
                b.add(FileAction(f"{url}#{partition_path(s)}", HTTP_REQUEST,
                                 "POST of the partition (Java's HttpReportMarkDoneAction)"))
    details = {"actions": acts, "partitions": [partition_path(s) for s in specs], "now": iso(at)}
    return b.build(MarkPartitionDonePlan, table, details)


# ---------------------------------------------------------------------------------------------- execution
@register_step(ADD_DONE_PARTITIONS)
def _add_done_partitions(ex: Execution, step: Step) -> None:
    cat = _metastore(ex.table, DONE_PARTITION)
    cat.add_partitions(ex.table, [dict(s) for s in step.params["partitions"]])
    ex.written.extend(step.files)


@register_step(MARK_EVENTS)
def _mark_events(ex: Execution, step: Step) -> None:
    cat = _metastore(ex.table, MARK_EVENT)
    cat.mark_partitions_done(ex.table, [dict(s) for s in step.params["partitions"]])
    ex.written.extend(step.files)


@register_step(POST_REPORTS)
def _post_reports(ex: Execution, step: Step) -> None:
    """Java's HttpReportMarkDoneAction: one POST per partition; anything but `{"result": "SUCCESS"}` fails."""
    table = ex.table
    url = str(step.params["url"])
    cat = catalog_of(table)
    timeout = cat.connect_timeout_s if cat is not None else CATALOG_CONNECT_TIMEOUT.default.total_seconds()
    for a, path in zip(step.files, step.params["partitions"]):
        body = json.dumps({"params": table.options.get(PARTITION_MARK_DONE_ACTION_PARAMS),
                           "table": table.identifier.split("$", 1)[0], "path": table.location,
                           "partition": path}).encode()
        req = urllib.request.Request(url, body, {"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 - the table's configured URL
                answer = r.read()
        except urllib.error.HTTPError as e:
            raise CatalogError(url, f"answered HTTP {e.code} to the mark-done report of partition {path}") from None
        except (urllib.error.URLError, OSError) as e:
            raise UnreachableError(url, f"{getattr(e, 'reason', e)}", what="the mark-done report server") from None
        try:
            result = json.loads(answer).get("result")
        except (ValueError, AttributeError):
            result = None
        if str(result).upper() != "SUCCESS":
            raise CatalogError(url, f"answered {answer[:200]!r} to the mark-done report of partition {path}; "
                                    "expected {\"result\": \"SUCCESS\"}")
        ex.written.append(a)


# ---------------------------------------------------------------------------------------------- reading the marks
@dataclass(frozen=True)
class DoneMark:
    """A partition some mark-done action says is done: `version` changes when it is marked again (a _SUCCESS
    file's modification time; 0 for marks that carry no time)."""

    partition: dict[str, str]
    path: str            # k=v/…/
    action: str
    version: int
    marked_at: int | None  # epoch ms (a _SUCCESS file's modification time)


def _partition_dirs(table: FileStoreTable, depth: int, base: str) -> list[tuple[dict[str, str], str]]:
    """Partition directories of the table's first `depth` keys under `base` ({key: value}, path relative to it)."""
    keys = list(table.schema.partition_keys)
    level: list[tuple[dict[str, str], str]] = [({}, "")]
    for k in keys[:depth]:
        nxt = []
        prefix = escape_path_name(k) + "="
        for spec, rel in level:
            try:
                entries = table.io.list_status(posixpath.join(base, rel) if rel else base)
            except FileNotFoundError:
                continue
            for st in entries:
                if st.is_dir and st.name.startswith(prefix):
                    nxt.append(({**spec, k: unescape_path_name(st.name[len(prefix):])}, f"{rel}{st.name}/"))
        level = nxt
    return level


def done_partitions(table: FileStoreTable, actions: Sequence[str] | None = None) -> list[DoneMark]:
    """What the table's mark-done actions (or `actions`) say is done now, metadata only: `_SUCCESS` files in the
    partition directories (every level), `.done` partitions in the metastore, LOAD_DONE events of the partitions
    that have a directory. Sorted by partition path."""
    acts = [a for a in _actions(table, actions) if a != HTTP_REPORT]  # (an HTTP report leaves nothing to read)
    keys = list(table.schema.partition_keys)
    out: list[DoneMark] = []
    if SUCCESS in acts:
        for depth in range(1, len(keys) + 1):
            for spec, rel in _partition_dirs(table, depth, table.root):
                path = posixpath.join(table.root, rel, SUCCESS_FILE)
                try:
                    created, modified = read_success_file(table.io.read_bytes(path), path)
                except FileNotFoundError:
                    continue
                out.append(DoneMark(spec, rel, SUCCESS, modified, modified))
    if DONE_PARTITION in acts and keys:
        cat = _metastore(table, DONE_PARTITION)
        for spec in cat.metastore_partitions(table):
            last = spec.get(keys[-1], "")
            if list(spec) == keys and last.endswith(DONE_SUFFIX):
                done = {**spec, keys[-1]: last[:-len(DONE_SUFFIX)]}
                out.append(DoneMark(done, partition_path(done), DONE_PARTITION, 0, None))
    if MARK_EVENT in acts and keys:
        cat = _metastore(table, MARK_EVENT)
        for spec, rel in _partition_dirs(table, len(keys), table.data_root):
            if cat.partition_marked_done(table, spec):
                out.append(DoneMark(spec, rel, MARK_EVENT, 0, None))
    return sorted(out, key=lambda m: (m.path, m.action))


def partition_marks(table: FileStoreTable, partition: Mapping[str, Any], actions: Sequence[str] | None = None
                    ) -> list[DoneMark]:
    """The marks of one partition (`{key: value}` of the leading keys) that the table's mark-done actions (or
    `actions`) leave: empty while it is not done. A few reads: its _SUCCESS file, its metastore partitions, its
    event."""
    acts = [a for a in _actions(table, actions) if a != HTTP_REPORT]
    keys = list(table.schema.partition_keys)
    if not keys:
        raise InvalidArgumentError(f"{table.identifier} is not partitioned: no partition of it is ever marked done")
    full = any(a in (DONE_PARTITION, MARK_EVENT) for a in acts)
    spec = ordered_spec(table, partition, full=full)
    path = partition_path(spec)
    out: list[DoneMark] = []
    if SUCCESS in acts:
        file = posixpath.join(table.root, path, SUCCESS_FILE)
        try:
            _, modified = read_success_file(table.io.read_bytes(file), file)
            out.append(DoneMark(spec, path, SUCCESS, modified, modified))
        except FileNotFoundError:
            pass
    if DONE_PARTITION in acts:
        done = {**spec, keys[-1]: spec[keys[-1]] + DONE_SUFFIX}
        if done in _metastore(table, DONE_PARTITION).metastore_partitions(table):
            out.append(DoneMark(spec, path, DONE_PARTITION, 0, None))
    if MARK_EVENT in acts and _metastore(table, MARK_EVENT).partition_marked_done(table, spec):
        out.append(DoneMark(spec, path, MARK_EVENT, 0, None))
    return out


__all__ = ["MarkPartitionDonePlan", "partition_marks", "plan_mark_partition_done", "DoneMark", "done_partitions", "partition_path",
           "ordered_spec", "read_success_file", "SUCCESS_FILE", "DONE_SUFFIX"]
