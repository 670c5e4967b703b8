"""Planning: the builder plans are made with (`PlanBuilder`: steps, preconditions, the feature gate), the planner
wrapper (`planner`: records the arguments, marks the plan fresh) and re-planning — a plan is a review artifact, not
an authority (design.md §1): a plan that did not come straight from its planner in this process is executed only
after `replan` decided the same on the live table."""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import dataclasses
import functools
import gc
import inspect
import json
import logging
import sys
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    Iterable,
    Iterator,
    Mapping,
    ParamSpec,
    TypeVar,
)

import paimon_ops.features as features
from paimon_ops.errors import CorruptMetadataError, PaimonOpsError, StalePlanError
from paimon_ops.execution.codec import Unrecordable, decode_param, encode_param
from paimon_ops.execution.files import FileAction, FileColumns
from paimon_ops.execution.model import (
    _DELETE_ACTIONS,
    OWNER_KINDS,
    Precondition,
    Step,
    gate_of,
)
from paimon_ops.operations.model import Operation
from paimon_ops.table.objectstore import is_store_option
from paimon_ops.timeutil import iso, now_ms

if TYPE_CHECKING:
    from paimon_ops.execution.plan import Plan

_P = ParamSpec("_P")
_R = TypeVar("_R", bound="Plan")


class PlanBuilder:
    """Collects steps; a path is deleted by one step only (the first that plans it: deletes only move earlier)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.warnings: list[str] = []
        self.preconditions: list[Precondition] = []
        self._seen: dict[str, set[str]] = {}  # directory (with its '/') -> names planned for deletion there
        self._dedupe = False
        self._name: str | None = None
        self._action: str | None = None
        self._files = FileColumns()
        self._creates: list[FileAction] = []
        self._params: dict[str, Any] = {}
        self._gated: set[str] = set()

    def gate(self, table: Any, operation: str, mode: str | None = None, uses: Any = None) -> None:
        """The feature gate of plan type `operation` (per `mode`) on `table`, now — before the planner reads in bulk;
        `build` then does not check it again. Without it, `build` gates the plan type (the gate fails closed: a plan
        type no operation declares, or a mode it does not name, is refused)."""
        features.require(table, gate_of(operation, mode), uses,
                         what=f"{operation} ({mode})" if mode else f"{operation} plan")
        self._gated.add(operation)

    def step(self, name: str, action: str, **params: Any) -> PlanBuilder:
        self._close()
        self._name, self._action, self._params = name, action, dict(params)
        self._dedupe = action.startswith("delete") or action in _DELETE_ACTIONS  # (once per step, not per file)
        return self

    def creates(self, action: FileAction) -> None:
        """A file the current step writes on the way (listed in the plan's writes)."""
        self._creates.append(action)

    def add(self, action: FileAction) -> bool:
        assert self._action is not None, "call step() first"
        if not self._dedupe:
            self._files.append(action)
            return True
        return self._add_once(action)

    def _add_once(self, a: FileAction) -> bool:
        path = a.path
        if not isinstance(path, str):
            raise TypeError(f"a file's path must be a string, not {type(path).__name__}")
        cut = path.rfind("/") + 1
        d, name = path[:cut], path[cut:]  # (the name string is the one the FileList keeps: no second copy)
        names = self._seen.get(d)
        if names is None:
            names = self._seen[d] = set()
        elif name in names:
            return False
        names.add(name)
        self._files.add_split(d, name, a.kind, a.reason, a.size)
        return True

    def add_all(self, actions: Iterable[FileAction]) -> None:
        """`add` of each action in turn (one loop: millions of files in a large expiry)."""
        assert self._action is not None, "call step() first"
        if not self._dedupe:
            self._files.extend(actions)
            return
        add = self._add_once
        for a in actions:
            add(a)

    def planned(self, path: str) -> bool:
        cut = path.rfind("/") + 1
        return path[cut:] in self._seen.get(path[:cut], ())

    def owners_first(self) -> None:
        """Move the steps that remove snapshot, tag or changelog files before every other step (keeping their order):
        a crash must never leave a snapshot or tag listed whose files are partly deleted. The executor records the
        content files in a journal before the first owner goes (execution/journal.py), so a rerun still reclaims them."""
        self._close()
        owners = [st for st in self.steps if st.files and all(a.kind in OWNER_KINDS for a in st.files)]
        self.steps = owners + [st for st in self.steps if not any(st is o for o in owners)]

    def require(self, *conditions: Precondition) -> None:
        self.preconditions += conditions

    def warn(self, msg: str) -> None:
        logging.getLogger("paimon_ops.execution.plan").warning(msg)
        self.warnings.append(msg)

    def _close(self) -> None:
        if self._action is not None and (self._files or self._creates or self._params.get("keep_empty")):
            params = {k: v for k, v in self._params.items() if k != "keep_empty"}
            self.steps.append(Step(self._name or self._action, self._action, self._files.freeze(), params,
                                   tuple(self._creates)))
        self._name, self._action, self._files, self._params, self._creates = None, None, FileColumns(), {}, []

    def build(self, cls: type[Plan], table: Any, details: Mapping[str, Any], base_snapshot: Any = "latest",
              warnings: Iterable[str] = ()) -> Any:
        self._close()
        if cls.operation not in self._gated:  # (compaction gates itself, per mode, before it scans)
            features.require(table, gate_of(cls.operation), what=f"{cls.operation or cls.__name__} plan")
        base = table.snapshots.latest_id() if base_snapshot == "latest" else base_snapshot
        return cls(table=table.identifier, location=table.location, branch=table.branch, base_snapshot=base,
                   planned_at=iso(now_ms()), preconditions=tuple(self.preconditions), steps=tuple(self.steps),
                   details=dict(details), warnings=tuple(self.warnings) + tuple(warnings),
                   options_override=_plan_options(table.options_override),
                   catalog=table.catalog.recorded_options() if getattr(table, "catalog", None) is not None else {})


# ---------------------------------------------------------------------------------------------- planners
# A plan is a review artifact, not an authority (design.md §1). Every operation's planner is registered here; the
# plan it returns records the arguments it was called with (`planned_with`). A plan that did not come straight from
# its planner in this process — read from JSON, or copied — is executed only after `replan`: the planner runs again
# with the recorded arguments on the live table, and the plan is refused unless that decision (steps, files,
# inputs, targets, preconditions, base snapshot) is exactly the reviewed one. What then runs is the fresh plan, so an
# edited plan can never do more than the command it claims to be.
FRESH = object()
_PLANNERS: dict[str, Planner[..., Any]] = {}  # by plan type
_PLANNERS_BY_OPERATION: dict[str, Planner[..., Any]] = {}
_PLANNING: contextvars.ContextVar[bool] = contextvars.ContextVar("paimon_ops_planning", default=False)


def _clock_now(params: dict[str, Any]) -> None:
    for name in ("now", "now_millis"):
        if name in params and params[name] is None:
            params[name] = int(time.time() * 1000)


_SAVED_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {}


_LARGE_PLAN = 100_000  # files: planning that many decoded manifests whose buffers the allocators keep


def _release_memory() -> None:
    """Give back to the system what a large planning freed: Arrow's pool and the C heap keep freed pages for reuse,
    and the execution that follows would otherwise peak on top of them (peak RSS below Java's)."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # (glibc; elsewhere there is nothing to call)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a plan is built: a large plan creates millions of long-lived objects
    (file actions, paths; none in a cycle), and each full collection would walk all of them again (a quarter of a
    1 M-entry expiry plan's time). Collection resumes afterwards as usual."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Planner(Generic[_P, _R]):
    """A planner, `fn(table, **arguments) -> Plan`, as `planner` wraps it: the outermost call records its arguments in
    the plan (after `resolve` filled what defaults to the clock, such as `now`) and marks the returned object as
    fresh. `operation` is the declaration of the operation it plans (its plan types'), whose `Params` it takes."""

    def __init__(self, fn: Callable[_P, _R], plan_types: tuple[type[Plan] | str, ...], internal: tuple[str, ...],
                 hidden: tuple[str, ...], resolve: Callable[[dict[str, Any]], None] | None,
                 renamed: Mapping[str, str]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.plan_types = plan_types
        self.internal = internal
        self.hidden = hidden
        self.resolve = resolve
        self.renamed = dict(renamed)
        self.signature = inspect.signature(fn)
        self._first = next(iter(self.signature.parameters))

    @property
    def operation(self) -> Operation | None:
        return next((t.op for t in self.plan_types if not isinstance(t, str) and t.op is not None), None)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        fn = self.fn
        if _PLANNING.get():  # part of another operation's plan
            return fn(*args, **kwargs)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        table = params.pop(self._first)
        if self.resolve is not None:
            self.resolve(params)
        token = _PLANNING.set(True)
        try:
            with _gc_paused():
                plan = fn(table, **params)  # type: ignore[arg-type]
        finally:
            _PLANNING.reset(token)
        try:
            recorded = encode_param({k: v for k, v in params.items() if k not in self.internal})
        except Unrecordable as e:
            recorded = {"$unrecordable": str(e)}
        op = self.operation
        plan = dataclasses.replace(plan, planned_with=recorded, planned_by=op.name if op is not None else None)
        object.__setattr__(plan, "_fresh", FRESH)
        object.__setattr__(plan, "_table", table)  # executed on (a refresh of) it: the same catalog
        if sum(len(s.files) for s in plan.steps) >= _LARGE_PLAN:
            _release_memory()
        return plan


def planner(*plan_types: type[Plan] | str, internal: tuple[str, ...] = (), hidden: tuple[str, ...] = (),
            resolve: Callable[[dict[str, Any]], None] | None = _clock_now,
            check_saved: Callable[[dict[str, Any]], None] | None = None,
            renamed: Mapping[str, str] | None = None) -> Callable[[Callable[_P, _R]], Planner[_P, _R]]:
    """The planner of `plan_types` (the plan classes it returns): `Planner`. A plan of those types read from JSON is
    re-planned with it (`replan`). Its arguments are its operation's `Params` fields, `hidden` ones (recorded in the
    plan but never offered to users: a run id `resolve` fills, a switch for other callers) and `internal` ones (used
    by other planners calling this one; not recorded);
    `check_saved(arguments)` refuses recorded arguments a saved plan may not carry (e.g. a time ahead of the clock);
    `renamed`: old name -> new name of arguments plans saved by earlier versions record."""
    names = [t if isinstance(t, str) else t.operation for t in plan_types]

    def deco(fn: Callable[_P, _R]) -> Planner[_P, _R]:
        wrapper = Planner(fn, plan_types, internal, hidden, resolve, renamed or {})
        for name in names:
            _PLANNERS[name] = wrapper
            if check_saved is not None:
                _SAVED_CHECKS[name] = check_saved
        if wrapper.operation is not None:
            _PLANNERS_BY_OPERATION[wrapper.operation.name] = wrapper
        return wrapper
    return deco


def replan(plan: Plan, table: Any) -> Plan:
    """The plan `plan`'s operation makes now, on `table`, with the recorded arguments — refused (StalePlanError, which
    lists the differences) unless it decides exactly what `plan` says. Nothing is changed either way."""
    op = plan.operation
    pw = plan.planned_with
    if not isinstance(pw, Mapping) or not pw:
        raise StalePlanError(op, plan.table, ["the plan does not record the arguments it was made with (made by an "
                                              "older paimon-ops, or edited), so it cannot be verified"])
    if "$unrecordable" in pw:
        raise StalePlanError(op, plan.table, [f"the plan was made with an argument that cannot be saved "
                                              f"({pw['$unrecordable']}), so it cannot be verified; plan and execute "
                                              "in one go"])
    fresh = plan_again(plan, table, saved=True)
    changes = decision_diff(plan, fresh)
    if changes:
        raise StalePlanError(op, plan.table, [f"the plan differs from what {op} decides on the table now with the "
                                              f"same arguments: {'; '.join(changes)}"])
    return fresh


def plan_again(plan: Plan, table: Any, saved: bool = False) -> Plan:
    """What `plan`'s planner decides now on `table` with the arguments `plan` records (a fresh plan). `saved`: the
    arguments come from a saved plan, so they are checked first."""
    op = plan.operation
    fn = _PLANNERS_BY_OPERATION.get(plan.planned_by or "") or _PLANNERS.get(op)
    if fn is None:
        raise PaimonOpsError(f"no planner for operation {op!r}")
    try:
        params = {fn.renamed.get(k, k): v for k, v in decode_param(dict(plan.planned_with)).items()}
        fn.signature.bind(table, **params)
    except (TypeError, ValueError) as e:
        raise CorruptMetadataError("plan", f"planned_with does not fit {op}: {e}") from None
    if saved and op in _SAVED_CHECKS:
        _SAVED_CHECKS[op](params)
    try:
        return fn(table, **params)
    except (TypeError, AttributeError, KeyError) as e:  # wrongly typed arguments the planner did not expect
        raise CorruptMetadataError("plan", f"planned_with does not fit {op}: {type(e).__name__}: {e}") from None


# What an execution does is decided by these parts of a plan (details, warnings and times are for people).
# (catalog: how the table is reached, not what the operation decides)
_NOT_DECISION = ("planned_at", "details", "warnings", "planned_with", "planned_by", "catalog")


def decision(plan: Plan) -> dict[str, Any]:
    d = plan.to_dict()
    for k in _NOT_DECISION:
        d.pop(k, None)
    return d


def decision_diff(reviewed: Plan, fresh: Plan, limit: int = 6) -> list[str]:
    """What differs between two plans' decisions, in words (at most `limit` items)."""
    a, b = decision(reviewed), decision(fresh)
    out: list[str] = []
    for k in sorted(set(a) | set(b)):
        if k in ("steps", "preconditions", "tasks") or a.get(k) == b.get(k):
            continue
        out.append(f"{k} is {_short(a.get(k))} in the plan, {_short(b.get(k))} now")
    pa_, pb = a.get("preconditions") or [], b.get("preconditions") or []
    if pa_ != pb:
        missing = [p for p in pb if p not in pa_]
        extra = [p for p in pa_ if p not in pb]
        changed = sorted({str(p.get("kind")) for p in missing} & {str(p.get("kind")) for p in extra})
        missing = [p for p in missing if str(p.get("kind")) not in changed]
        extra = [p for p in extra if str(p.get("kind")) not in changed]
        if changed:
            out.append("precondition(s) " + ", ".join(changed) + " differ from what the table requires now")
        if missing:
            out.append("preconditions missing from the plan: " + ", ".join(str(p.get("kind")) for p in missing))
        if extra:
            out.append("preconditions the operation does not make: " + ", ".join(str(p.get("kind")) for p in extra))
    out += _list_diff("step", a.get("steps") or [], b.get("steps") or [])
    if "tasks" in a or "tasks" in b:
        out += _list_diff("task", a.get("tasks") or [], b.get("tasks") or [])
    if len(out) > limit:
        out = out[:limit] + [f"and {len(out) - limit} more difference(s)"]
    return out


def _short(v: Any, n: int = 60) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= n else text[:n - 3] + "..."


def _label(kind: str, i: int, x: Any) -> str:
    if isinstance(x, dict):
        name = x.get("name") or (f"partition {x.get('partition_spec')} bucket {x.get('bucket')}"
                                 if "bucket" in x else None)
        if name:
            return f"{kind} {i + 1} ({name})"
    return f"{kind} {i + 1}"


def _list_diff(kind: str, a: list, b: list) -> list[str]:
    out: list[str] = []
    if len(a) != len(b):
        out.append(f"the plan has {len(a)} {kind}(s), the operation makes {len(b)} now")
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        label = _label(kind, i, x)
        if not isinstance(x, dict) or not isinstance(y, dict):
            out.append(f"{label} differs")
            continue
        for field_name in sorted(set(x) | set(y)):
            xv, yv = x.get(field_name), y.get(field_name)
            if xv == yv:
                continue
            if field_name in ("files", "creates", "lookup_files") and isinstance(xv, list) and isinstance(yv, list):
                xp = [f.get("path") if isinstance(f, dict) else f for f in xv]
                yp = [f.get("path") if isinstance(f, dict) else f for f in yv]
                extra = [p for p in xp if p not in set(yp)]
                missing = [p for p in yp if p not in set(xp)]
                parts = []
                if extra:
                    parts.append(f"{len(extra)} not decided now ({', '.join(map(str, extra[:3]))}"
                                 f"{', …' if len(extra) > 3 else ''})")
                if missing:
                    parts.append(f"{len(missing)} decided now but not in the plan ({', '.join(map(str, missing[:3]))}"
                                 f"{', …' if len(missing) > 3 else ''})")
                out.append(f"{label} {field_name}: " + ("; ".join(parts) if parts else "differ"))
            else:
                out.append(f"{label}: {field_name} is {_short(xv)} in the plan, {_short(yv)} now")
    for i in range(len(b), len(a)):
        out.append(f"{_label(kind, i, a[i])} is not one the operation makes")
    return out


def _plan_options(options: Mapping[str, str]) -> dict[str, str]:
    """A plan's option overrides, without object-store settings: plans are printed and saved, and secrets must not
    be (a plan re-opens its table with the store settings its process was given, objectstore.py)."""
    return {k: v for k, v in options.items() if not is_store_option(k)}


__all__ = ["PlanBuilder", "Planner", "planner", "replan", "plan_again", "decision", "decision_diff", "FRESH"]
