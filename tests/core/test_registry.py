"""Every operation is one declaration (its module in paimon_ops.operations: typed Params, gate, health, faces) bound
to its planner by one facade line (paimon_ops.api); everything else is derived from it, and this proves each derivation
for every operation: facade ⇔ Params ⇔ planner (same names, types, defaults; nothing typed Any) ⇔ CLI subcommand and
flags ⇔ Dagster job and run config ⇔ Airflow operator ⇔ feature gate (every plan type covered, an undeclared one
refused); every plan type round-trips through JSON, and the older operations through apply on real tables."""
from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import operator

import pyarrow as pa
import pytest

import paimon_ops as po
import paimon_ops.api as registry
from paimon_ops.execution.plan import plan_type
from paimon_ops.operations.model import TASKS
from paimon_ops.table.writer import TableWriter, create_table

T0 = 1_780_000_000_000  # commit times of the writes (2026-05-28), "now" of the plans a day later
NOW = T0 + 86_400_000


def test_the_registry_lists_one_module_per_operation():
    import pkgutil

    import paimon_ops.operations

    modules = {m.name for m in pkgutil.iter_modules(paimon_ops.operations.__path__)} - {"model"}
    assert modules == set(registry.OPERATIONS)
    for op in registry.OPERATIONS.values():
        types = registry.plan_types(op)
        assert types and all(registry.by_plan_type(t) is op for t in types)
        for t in types:  # `apply` finds the plan type
            cls = plan_type(t)
            assert cls is not None and cls.operation == t


def test_the_gate_covers_every_plan_type_and_fails_closed(tmp_path):
    """Every plan type an operation makes has the operation's feature gate (each compaction mode its own); a plan
    type no operation declares is refused at planning and at execution, naming it."""
    from paimon_ops.errors import UnsupportedError
    from paimon_ops.execution.plan import _PLANS, Plan, PlanBuilder, gate_of

    for cls in _PLANS.values():
        op = registry.by_plan_type(cls.operation)
        assert op is not None and op is registry.OPERATIONS[op.name], \
            f"plan type {cls.operation} is made by no registered operation"
        gates = op.gates()
        assert gates and all(isinstance(g.handles, frozenset) for g in gates), cls.operation
        if op.modes:
            assert [gate_of(cls.operation, m.name) for m in op.modes] == list(gates)
        else:
            assert gate_of(cls.operation) == gates[0]

    class UngatedPlan(Plan):
        operation = "ungated_for_the_test"

    try:
        table = create_table(str(tmp_path / "wh"), "db.t", [("id", "INT")])
        with pytest.raises(UnsupportedError, match="ungated_for_the_test plan refused: it declares no feature gate"):
            PlanBuilder().build(UngatedPlan, table, {})
        plan = UngatedPlan(table="db.t", location=table.location)
        with pytest.raises(UnsupportedError, match="declares no feature gate"):
            plan.execute()
        with pytest.raises(UnsupportedError, match=r"compact \(bogus\) refused"):
            PlanBuilder().gate(table, "compact", "bogus")
    finally:
        _PLANS.pop(UngatedPlan.operation, None)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from paimon_ops.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_operation_has_its_cli_subcommand_and_flags():
    commands = _subcommands()
    for op in registry.OPERATIONS.values():
        sp = commands[op.command]
        flags = {o for a in sp._actions for o in a.option_strings}
        dests = {a.dest for a in sp._actions}
        for p in op.params:
            if p.cli:
                assert (p.name in dests) if p.positional else (p.cli_flag in flags), (op.name, p.name)
        assert ("--spark-master" in flags) == (op.placement == TASKS), op.name
        assert ("--yes" in flags) == op.confirm, op.name


def test_every_operation_has_a_facade_method_taking_exactly_its_parameters():
    owners = {"maintenance": po.Maintenance, "tags": po.Tags}
    for op in registry.OPERATIONS.values():
        owner, _, method = registry.FACADE[op.name].partition(".")
        fn = getattr(owners[owner], method)
        sig = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        want = [p.name for p in op.params] + (["now"] if op.takes_now else [])
        assert [p.name for p in sig] == want, op.name
        for p, declared in zip(sig, op.params):
            if declared.positional:
                assert p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL), (op.name, p.name)
            else:
                assert p.kind is p.KEYWORD_ONLY and p.default == declared.default, (op.name, p.name)
        assert inspect.getdoc(fn), op.name


def _planners():
    """operation -> the planner its facade method is bound to (operations declared with `Params`)."""
    owners = {"maintenance": po.Maintenance, "tags": po.Tags}
    out = {}
    for name, path in registry.FACADE.items():
        owner, _, method = path.partition(".")
        planner = getattr(getattr(owners[owner], method), "planner", None)
        if planner is not None:
            out[name] = planner
    return out


def test_each_planner_takes_exactly_its_operations_params():
    """The planner's keywords are the operation's `Params` fields — same names, same types, same defaults — plus the
    arguments it declares as hidden (recorded, never offered) or internal; nothing is typed Any."""
    import typing

    planners = _planners()
    assert "compact_manifests" in planners
    for name, planner in planners.items():
        op = registry.OPERATIONS[name]
        assert planner.operation is op, name
        declared = op.params_type.types()
        sig = planner.signature
        names = list(sig.parameters)[1:]  # after the table
        assert [n for n in names if n not in planner.internal + planner.hidden] == list(declared), name
        hints = typing.get_type_hints(planner.fn, include_extras=True)
        assert all(hints[n] == tp for n, tp in declared.items()), (name, hints)
        assert all(hints[n] is not typing.Any for n in names), name
        for p in op.params_type.declared():  # names are required; everything else has the declared default
            want = inspect.Parameter.empty if p.positional else p.default
            assert sig.parameters[p.name].default == want, (name, p.name)


def test_every_operation_has_its_airflow_operator_taking_exactly_its_parameters():
    """The Airflow provider's operation table (paimon_ops.airflow.operations, no Airflow import: the operators are
    generated from it, checked in a real Airflow by tests/airflow) is the registry's: same operations, the facade's
    parameters with the declared defaults."""
    from paimon_ops.airflow import operations as airflow_ops
    from paimon_ops.airflow.names import operator_class_name

    assert list(airflow_ops.OPERATIONS) == list(registry.OPERATIONS)
    for name, op in registry.OPERATIONS.items():
        a = airflow_ops.OPERATIONS[name]
        assert a.registered is op and a.facade == registry.FACADE[name], name
        want = [p.name for p in op.params] + (["now"] if op.takes_now else [])
        assert [p.name for p in a.parameters] == want, name
        for p in a.parameters:
            assert p.positional == p.param.positional and (p.required == p.positional), (name, p.name)
        assert operator_class_name(name).endswith("Operator"), name


def test_every_table_changing_operation_has_a_dagster_job_with_its_own_config():
    from paimon_ops.dagster.jobs import JOBS, job_config
    from paimon_ops.dagster.operations import CONFIG_BY_KIND, DAGSTER_OPERATIONS
    from paimon_ops.dagster.spec import PRIMARY_KEY

    schema = CONFIG_BY_KIND[PRIMARY_KEY].to_config_schema().as_field()
    for op in registry.OPERATIONS.values():
        if not op.changes_table:
            continue
        if op.dagster_job is None:
            assert op.manual_why, f"{op.name}: changes tables but has no Dagster job and says not why"
            continue
        ops, _ = JOBS[op.dagster_job]
        assert ops == (op.dagster_key,) and DAGSTER_OPERATIONS[op.dagster_key] is op
        mapping = job_config(ops, {"paimon_primary_key_tables": schema})
        fields = mapping.config_schema.config_type.fields["ops"].config_type.fields["paimon_primary_key_tables"]
        config = fields.config_type.fields["config"].config_type.fields
        # due_checks: what a sensor's run of many tables sets (each table does what those signals make due)
        assert sorted(config) == sorted(["dry_run", "due_checks", op.dagster_key]), op.name
        knobs = set(config[op.dagster_key].config_type.fields)
        assert knobs == {p.name for p in op.params if p.dagster and not p.positional and
                         (p.by_table_kind is None or PRIMARY_KEY in p.by_table_kind)}, op.name


def test_every_health_signal_has_its_dagster_check_and_a_sensor_requesting_its_operation():
    from paimon_ops.dagster import checks
    from paimon_ops.dagster.sensors import OBSERVATION_SENSOR, build_sensors

    signals = registry.health_signals()
    assert {op.name for op, _ in signals} == {"compact", "expire_snapshots", "expire_partitions", "compact_manifests"}
    for op, h in signals:
        assert op.changes_table and op.dagster_job, op.name
        assert h.check in checks._CHECKS and h.check in checks.CHEAP, (op.name, h.check)
    sensors = {s.name: s for s in build_sensors([], {op.name: op.dagster_job for op, _ in signals})}
    assert set(sensors) == {OBSERVATION_SENSOR} | {h.sensor for _, h in signals}
    for op, h in signals:
        assert sensors[h.sensor].job_name == op.dagster_job, h.sensor


# ------------------------------------------------------------------------------------- apply round trip
@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("registry") / "wh")
    pk = create_table(wh, "db.pk", [("dt", "STRING"), ("id", "INT"), ("v", "STRING")], partition_keys=["dt"],
                      primary_keys=["dt", "id"], options={"bucket": "1", "tag.create-time": "00:00",
                                                          "partition.timestamp-formatter": "yyyy-MM-dd"})
    for i in range(3):
        w = TableWriter(pk)
        w.write(pa.table({"dt": ["2026-05-01", "2026-05-28"], "id": pa.array([i, i], pa.int32()),
                          "v": [f"v{i}", f"w{i}"]}))
        w.commit(now_millis=T0 + i * 60_000, watermark=T0 + i * 60_000 - 1000)
    pk.io.write_bytes(pk.consumers.path("reader"), b'{"nextSnapshot":3}')  # a streaming reader's progress
    create_table(wh, "db.pp", [("id", "INT"), ("v", "STRING")], primary_keys=["id"], options={"bucket": "-2"})
    ap = create_table(wh, "db.ap", [("id", "INT"), ("v", "STRING")], options={"file-index.bitmap.columns": "id"})
    w = TableWriter(ap)
    w.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    w.commit(now_millis=T0)
    return po.Catalog(wh)


# An example of each operation, in the order they run on the tables: (table, positional names, keyword values).
EXAMPLES: list[tuple[str, str, tuple, dict]] = [
    ("create_tag", "db.pk", ("t1",), {"snapshot_id": 2}),
    ("rename_tag", "db.pk", ("t1", "t2"), {}),
    ("rollback", "db.pk", (), {"snapshot_id": 2}),
    ("create_branch", "db.pk", ("b1",), {"tag": "t2"}),
    ("rename_branch", "db.pk", ("b1", "b2"), {}),
    ("fast_forward", "db.pk", ("b2",), {}),
    ("create_branch", "db.pk", ("b3",), {"snapshot_id": 2}),
    ("delete_branch", "db.pk", ("b3",), {}),
    ("reset_consumer", "db.pk", ("reader",), {"snapshot_id": 1}),
    ("clear_consumers", "db.pk", (), {"including": "read.*"}),
    ("create_tag_from_timestamp", "db.pk", ("t3",), {"timestamp": T0 + 1}),
    ("create_tag_from_watermark", "db.pk", ("t4",), {"watermark": T0}),
    ("replace_tag", "db.pk", ("t3",), {"snapshot_id": 1}),
    ("delete_tags", "db.pk", (["t2", "t3", "t4"],), {}),
    ("create_auto_tags", "db.pk", (), {"now": NOW}),
    ("compact", "db.pk", (), {"mode": "full", "now": NOW}),
    ("compact_manifests", "db.pk", (), {}),
    ("expire_snapshots", "db.pk", (), {"retain_min": 1, "retain_max": 1, "now": NOW}),
    ("expire_tags", "db.pk", (), {"now": NOW}),
    ("remove_orphans", "db.pk", (), {"now": NOW}),
    ("rescale", "db.pk", (), {"bucket_num": 2}),
    ("expire_partitions", "db.pk", (), {"expiration_time": dt.timedelta(days=7), "now": NOW}),
    ("compact_postpone", "db.pp", (), {}),
    ("mark_partition_done", "db.pk", (), {"partitions": [{"dt": "2026-05-28"}], "now": NOW}),
    ("remove_unexisting_files", "db.pk", (), {"partitions": [{"dt": "2026-05-28"}]}),
    ("repair", "db.pk", (), {}),
    ("rewrite_file_index", "db.ap", (), {}),
]


def test_every_plan_type_round_trips_through_json():
    """Every plan type a registered operation makes decodes from its own JSON to an equal plan (a new operation's
    apply round trip on a real table is in its own tests; EXAMPLES below run the older ones)."""
    from paimon_ops.execution.plan import registered_plan_types

    for name, cls in registered_plan_types().items():
        assert registry.by_plan_type(name) is not None, name
        plan = cls(table="db.t", location="/wh/db.db/t", planned_with={"now": 1}, planned_by=cls.op.name)
        assert po.Plan.from_json(plan.to_json()).to_dict() == plan.to_dict(), name


def test_every_operation_round_trips_through_json_and_apply(tables):
    """Planned through the facade, saved as JSON, loaded as `apply` does (`po.load_plan`), executed in-process."""
    for name, ident, args, kw in EXAMPLES:
        op = registry.OPERATIONS[name]
        table = tables.get_table(ident)
        plan = operator.attrgetter(registry.FACADE[name])(table)(*args, **kw)
        text = plan.to_json()
        assert json.loads(text)["operation"] in registry.plan_types(op), name
        loaded = po.load_plan(text)
        assert type(loaded) is type(plan) and loaded.to_dict() == plan.to_dict(), name
        report = loaded.execute(runner=po.LocalRunner())
        assert not report.dry_run, name
    t = tables.get_table("db.pk")
    assert t.raw.options.bucket == 2 and [tag.name for tag in t.tags.list()] == ["2026-05-28"]  # the auto tag


def test_values_from_text_are_converted_and_refused_in_the_callers_words():
    exp = registry.OPERATIONS["expire_snapshots"]
    got = exp.coerce({"retain_min": "3", "min_age": "1 d", "older_than": None})
    assert got == {"retain_min": 3, "min_age": dt.timedelta(days=1)}
    with pytest.raises(po.InvalidArgumentError, match="--older-than '1 d' is an age.*use --min-age"):
        exp.coerce({"older_than": "1 d"}, exp.cli_words())
    with pytest.raises(po.InvalidArgumentError, match=r"give older_than \(an instant\) or min_age \(an age\), not both"):
        exp.coerce({"older_than": 1, "min_age": "1 d"})
    with pytest.raises(po.InvalidArgumentError, match="takes no argument bogus"):
        exp.coerce({"bogus": 1})
    assert registry.OPERATIONS["compact"].coerce({"partitions": ["dt=1,h=2"]}) == {
        "partitions": [{"dt": "1", "h": "2"}]}
