"""The provider as Airflow sees it: metadata valid against Airflow's own schemas, the `paimon` connection form
(fields, labels, secrets) loaded by the providers manager through the entry point, and one operator per operation
taking exactly the facade's parameters (the operation table is the registry, paimon_ops.operations, checked against the facade)."""
from __future__ import annotations

import inspect
import json
import subprocess
from pathlib import Path

import paimon_ops.api as api
from paimon_ops.airflow.operations import FACADE, OPERATIONS, REQUIRED

HERE = Path(__file__).resolve().parent


def test_operation_table_is_the_facade():
    """Every entry names a facade method; its parameters, defaults and annotations are the facade's own."""
    assert set(FACADE) >= {"compact", "expire_snapshots", "expire_tags", "expire_partitions", "remove_orphans",
                           "compact_manifests", "create_tag", "delete_tags", "rename_tag", "create_auto_tags",
                           "rollback"}
    for name, op in OPERATIONS.items():
        owner, _, method = FACADE[name].partition(".")
        fn = getattr({"maintenance": api.Maintenance, "tags": api.Tags}[owner], method)
        sig = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        assert [p.name for p in op.parameters] == [p.name for p in sig], name
        for mine, theirs in zip(op.parameters, sig):
            expected = REQUIRED if theirs.kind is theirs.VAR_POSITIONAL else theirs.default
            assert mine.default == expected, (name, mine.name)
            assert mine.annotation == theirs.annotation, (name, mine.name)
        assert op.doc == inspect.getdoc(fn) and op.doc, name
    assert OPERATIONS["compact"].parameter("mode").default == "full"
    assert all(m in OPERATIONS["compact"].parameter("mode").doc for m in ("full", "minor", "dv-ratio", "small-files", "sort"))
    assert OPERATIONS["create_tag"].parameter("name").positional and OPERATIONS["create_tag"].parameter("name").required


def test_provider_metadata_and_operators_in_airflow(airflow_bin):
    proc = subprocess.run([str(airflow_bin / "python"), str(HERE / "provider_check.py")], capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("PROVIDER_CHECK "))[15:])
    assert out["entry_points"] == ["provider_info=paimon_ops.airflow.get_provider_info:get_provider_info"]
    assert out["provider"] == "paimon-ops"
    assert out["hook"] == "paimon_ops.airflow.hooks.PaimonHook paimon_conn_id Apache Paimon (paimon-ops)"
    widgets = out["widgets"]
    assert set(widgets) == {f"extra__paimon__{k}" for k in ("s3_endpoint", "s3_region", "s3_path_style_access",
                                                           "s3_session_token", "options", "spark_master",
                                                           "spark_remote", "placement", "connect_timeout")}
    assert widgets["extra__paimon__s3_session_token"]["sensitive"]
    assert not widgets["extra__paimon__s3_endpoint"]["sensitive"]
    behaviour = out["behaviour"]
    assert set(behaviour["hidden_fields"]) == {"schema", "port", "extra"}
    assert behaviour["relabeling"]["host"] == "Warehouse"
    assert behaviour["relabeling"]["password"] == "Secret key (s3.secret-key)"

    ops = out["operators"]
    assert set(ops) == set(OPERATIONS)
    for name, o in ops.items():
        assert o["arguments"] == o["signature"] == out["facade"][name], name
        assert o["subclass"] and o["rejects_unknown"], name
        assert o["module"] == "paimon_ops.airflow.operators"
        assert o["pool"] == "paimon.db.t"  # the table's pool, by default
        assert OPERATIONS[name].summary.split("`")[0][:20] in o["doc"], name
    assert ops["compact"]["class"] == "PaimonCompactOperator"
    # a connection's options extra carries catalog options: the hook's catalog is the JDBC one, secrets unprinted
    jdbc = out["jdbc_connection"]
    assert jdbc["tables"] == ["shop.orders"] and jdbc["metastore"] == "jdbc" and jdbc["table_option"] == "4"
    assert "not-printed" not in jdbc["settings_repr"]
    assert ops["create_auto_tags"]["class"] == "PaimonCreateAutoTagsOperator"


def test_the_generated_operators_are_typed_without_a_list():
    """operators.py types the generated classes for type checkers by a module __getattr__ (any Paimon…Operator is a
    PaimonOperationOperator class): no hand-kept list a new operation would have to join."""
    from paimon_ops.airflow.names import operator_class_name

    text = (Path(__file__).resolve().parents[2] / "paimon_ops" / "airflow" / "operators.py").read_text()
    block = text.split("if TYPE_CHECKING:", 1)[1].split("\n\n", 1)[0]
    assert "def __getattr__(name: str) -> type[PaimonOperationOperator]" in block
    assert operator_class_name("create_auto_tags") == "PaimonCreateAutoTagsOperator"
