"""Session fixtures for the interop proof tests.

``java_tables`` writes every Java Paimon 0.9 table once per session (one JVM for all creates/writes/tags),
plus two pypaimon 2.1.0 tables, then asks Java (one more JVM) for the scan and batch read of every snapshot
and tag of every read-only table. Tests compare our scanner/reader against those answers; the ``w_*`` /
``meta_*`` tables are handed to exactly one test each, which commits to them.
"""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

DB = "db"


def _schema(fields, pk=(), parts=(), **opts) -> dict:
    return {"fields": [{"name": n, "type": t} for n, t in fields], "partition_keys": list(parts),
            "primary_keys": list(pk),
            "options": {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in opts.items()}}


@dataclass
class TableCase:
    name: str
    kind: str                     # "pk-dv" | "pk" | "partial-update" | "aggregation" | "first-row" | "append"
    warehouse: str
    agg: dict[str, str] = field(default_factory=dict)
    scans: dict[tuple, dict] = field(default_factory=dict)   # ("snapshot", id) | ("tag", name) -> Java scan
    reads: dict[tuple, dict] = field(default_factory=dict)   # same keys -> Java read
    written: Any = None            # what the build wrote (for the mutable tables)

    @property
    def identifier(self) -> str:
        return f"{DB}.{self.name}"

    @property
    def path(self) -> Path:
        return Path(self.warehouse) / f"{DB}.db" / self.name

    @property
    def java(self) -> JavaTable:
        return JavaTable(self.warehouse, DB, self.name)


# ------------------------------------------------------------------------------------------ Java tables

TYPE_FIELDS = [("pb", "BOOLEAN NOT NULL"), ("pl", "BIGINT NOT NULL"), ("pt", "TIMESTAMP(3) NOT NULL"),
               ("pf", "DOUBLE NOT NULL"), ("pti", "TINYINT NOT NULL"), ("ks", "STRING NOT NULL"),
               ("kd", "DECIMAL(38, 6) NOT NULL"), ("kt", "TIMESTAMP(6) NOT NULL"), ("ksi", "SMALLINT NOT NULL"),
               ("v", "STRING"), ("by", "BYTES"), ("fl", "FLOAT"), ("arr", "ARRAY<INT>"), ("m", "MAP<STRING, BIGINT>"),
               ("r", "ROW<x INT, y STRING>"), ("t3", "TIMESTAMP(3)"), ("c", "CHAR(3)"), ("vc", "VARCHAR(10)"),
               ("d", "DATE"), ("tm", "TIME")]
TYPE_PARTS = ("pb", "pl", "pt", "pf", "pti")
TYPE_PK = TYPE_PARTS + ("ks", "kd", "kt", "ksi")


def types_row(i: int, tag: str) -> list:
    """One row of the w_types table in the harness' JSON conventions (as Java renders it back)."""
    return [i % 2 == 0, 10**12 * (i % 3) - 5, f"2024-0{i % 3 + 1}-01 10:0{i % 4}:05", [1e10, 0.1, -2.5][i % 3], -i % 3,
            ("long-key-string-" * (i % 2)) + f"k{i}é",
            f"{-i}.123456" if i % 2 else f"1{i}345678901234567890.500000",
            f"2020-01-01 00:00:00.{i:06d}" if i else "2020-01-01 00:00:00", i - 3,
            f"{tag}{i}", "AQID" if i % 3 else None, 1.5, [i, None], [["a", i], ["b", None]], [i, "s"],
            "2024-01-01 00:00:00.123000", "ab" if i % 2 else None, "xyz", "2000-02-29", "12:34:56"]


def _java_build(wh: str) -> tuple[list[tuple[str, dict]], dict[str, TableCase]]:
    cmds: list[tuple[str, dict]] = []
    cases: dict[str, TableCase] = {}

    def t(name: str, **extra) -> dict:
        return {"warehouse": wh, "database": DB, "table": name, **extra}

    def add(name, kind, schema, batches, tags=(), agg=None, compact_after=False):
        cases[name] = TableCase(name, kind, wh, agg or {})
        cmds.append(("create_table", t(name, schema=schema)))
        cmds.append(("write", t(name, batches=batches)))
        if compact_after:
            cmds.append(("compact", t(name, full=True)))
        for tag, sid, *retained in tags:  # (name, snapshot[, time_retained_ms]): Java writes TTL fields then
            cmds.append(("create_tag", t(name, tag=tag, snapshot_id=sid,
                                         **({"time_retained_ms": retained[0]} if retained else {}))))

    # 1. primary key + deletion vectors, partitioned by STRING, parquet: levels 5/4/3 and DV index files
    b1 = {"rows": [[p, i, f"v{i}", i] for p in ("a", "b") for i in range(60)]}
    b2 = {"rows": [["a", i, f"w{i}", i * 10] for i in range(20)] + [["b", 5, None, None]],
          "kinds": ["+U"] * 20 + ["-D"]}
    b3 = {"rows": [["a", i, f"x{i}", -i] for i in range(10, 15)] + [["a", 50, None, None], ["b", 7, "y", 7]],
          "kinds": ["+I"] * 5 + ["-D", "+U"]}
    add("pk_dv", "pk-dv",
        _schema([("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")],
                pk=("pt", "id"), parts=("pt",), **{"bucket": 2, "deletion-vectors.enabled": True}),
        [b1, b2, b3], tags=[("t4", 4)])

    # 2. DV table, unpartitioned, ORC
    add("pk_dv_orc", "pk-dv",
        _schema([("id", "BIGINT NOT NULL"), ("s", "STRING"), ("d", "DOUBLE")], pk=("id",),
                **{"bucket": 1, "deletion-vectors.enabled": True, "file.format": "orc"}),
        [{"rows": [[i, f"s{i}", i / 4] for i in range(50)]},
         {"rows": [[i, None, None] for i in range(0, 50, 3)], "kinds": ["-D"] * 17},
         {"rows": [[i, f"t{i}", -1.5] for i in range(40, 60)]}])

    # 3. primary key without DV, partitioned by INT, ORC, small compaction trigger: levels 0, 3, 5 over time
    rows = lambda lo, hi, tag: [[p, k, f"{tag}{k}", k] for p in (1, 2) for k in range(lo, hi)]  # noqa: E731
    add("pk_lv", "pk",
        _schema([("p", "INT NOT NULL"), ("k", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")],
                pk=("p", "k"), parts=("p",),
                **{"bucket": 2, "file.format": "orc", "num-sorted-run.compaction-trigger": 3}),
        [{"rows": rows(0, 40, "a"), "compact": True},
         {"rows": rows(0, 10, "b") + [[1, 30, None, None]], "kinds": ["+U"] * 20 + ["-D"]},
         {"rows": rows(5, 15, "c"), "compact": True, "full": False},
         {"rows": rows(12, 20, "d"), "compact": True, "full": False},
         {"rows": rows(18, 22, "e") + [[2, 3, None, None]], "kinds": ["+I"] * 8 + ["-D"]}],
        tags=[("t2", 2), ("t3", 3, 86_400_000)])

    # 4. partial-update, partitioned by DATE
    add("pk_pu", "partial-update",
        _schema([("d", "DATE NOT NULL"), ("k", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING")],
                pk=("d", "k"), parts=("d",), **{"bucket": 1, "merge-engine": "partial-update"}),
        [{"rows": [["2024-01-01", 1, 10, "a"], ["2024-01-01", 2, 20, None], ["2024-03-05", 3, 30, "c"]]},
         {"rows": [["2024-01-01", 1, None, "a2"], ["2024-01-01", 2, 5, "b2"]]},
         {"rows": [["2024-01-01", 1, 1, None], ["2024-03-05", 3, 3, "c3"]], "compact": True}])

    # 5. aggregation, partitioned by DECIMAL, compaction trigger 2 (intermediate levels)
    agg = {"a": "sum", "b": "max"}
    add("pk_agg", "aggregation",
        _schema([("p", "DECIMAL(10, 2) NOT NULL"), ("k", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING")],
                pk=("p", "k"), parts=("p",),
                **{"bucket": 2, "merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                   "fields.b.aggregate-function": "max", "num-sorted-run.compaction-trigger": 2}),
        [{"rows": [["1.50", k, k, f"x{k}"] for k in range(8)] + [["-2.00", 1, 100, "z"]]},
         {"rows": [["1.50", k, 10, "y"] for k in range(0, 8, 2)]},
         {"rows": [["1.50", 1, 1, "a"], ["-2.00", 1, 1, "zz"]]},
         {"rows": [["1.50", 3, 7, None]]}],
        agg=agg)

    # 6. first-row, partitioned by STRING, ORC
    add("pk_first", "first-row",
        _schema([("pt", "STRING NOT NULL"), ("k", "INT NOT NULL"), ("v", "STRING")], pk=("pt", "k"),
                parts=("pt",), **{"bucket": 1, "merge-engine": "first-row", "file.format": "orc"}),
        [{"rows": [["x", k, f"first{k}"] for k in range(10)]},
         {"rows": [["x", k, f"second{k}"] for k in range(5, 15)] + [["y", 1, "y1"]]},
         {"rows": [["x", k, f"third{k}"] for k in range(12, 18)]}])

    # 7. append, unaware bucket (-1), partitioned by STRING, parquet; full compaction then more writes
    add("ap", "append",
        _schema([("k", "INT"), ("dt", "STRING"), ("ts", "TIMESTAMP(3)"), ("m", "DECIMAL(20, 4)")],
                parts=("dt",), bucket=-1),
        [{"rows": [[i, d, f"2024-01-0{i % 9 + 1} 10:00:00", f"{i}.5000"] for d in ("x", "y")]} for i in range(4)],
        tags=[("before_compact", 3)], compact_after=True)
    cmds.append(("write", t("ap", batches=[{"rows": [[9, "x", None, None]]}, {"rows": [[10, "z", None, "1.0000"]]}])))
    cmds.append(("create_tag", t("ap", tag="after", snapshot_id=7)))

    # 8. append, fixed buckets (bucket-key), partitioned by INT, ORC
    add("ap_b", "append",
        _schema([("p", "INT"), ("k", "BIGINT"), ("v", "STRING")], parts=("p",),
                **{"bucket": 2, "bucket-key": "k", "file.format": "orc"}),
        [{"rows": [[p, k, f"v{k}"] for p in (1, 2) for k in range(10)]},
         {"rows": [[1, k, f"w{k}"] for k in range(5)]},
         {"rows": [[2, k, f"z{k}"] for k in range(3)], "compact": True}])

    # ---- tables the write tests commit to (created and seeded by Java, handed to one test each)
    w_fields = [("pi", "INT NOT NULL"), ("pd", "DATE NOT NULL"), ("pdec", "DECIMAL(10, 2) NOT NULL"),
                ("ps", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT"),
                ("f", "DOUBLE"), ("ts", "TIMESTAMP(6)"), ("big", "DECIMAL(20, 4)"), ("ok", "BOOLEAN")]
    w_seed = [[pi, pd, pdec, ps, i, f"j{i}", i * 100, i / 8, f"2024-05-0{i % 9 + 1} 01:02:03.123456",
               f"{i}.0001", i % 2 == 0]
              for pi, pd, pdec, ps in ((1, "2024-01-01", "1.10", "s"), (-7, "1999-12-31", "-0.05", "t t"))
              for i in range(12)]
    cases["w_pk"] = TableCase("w_pk", "pk", wh, written=w_seed)
    cmds.append(("create_table", t("w_pk", schema=_schema(
        w_fields, pk=("pi", "pd", "pdec", "ps", "id"), parts=("pi", "pd", "pdec", "ps"), bucket=3))))
    cmds.append(("write", t("w_pk", batches=[{"rows": w_seed}])))

    pu_seed = [[p, k, k, None] for p in (1, 2) for k in range(6)]
    cases["w_pu"] = TableCase("w_pu", "partial-update", wh, written=pu_seed)
    cmds.append(("create_table", t("w_pu", schema=_schema(
        [("p", "INT NOT NULL"), ("k", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING")], pk=("p", "k"),
        parts=("p",), **{"bucket": 2, "merge-engine": "partial-update", "file.format": "orc"}))))
    cmds.append(("write", t("w_pu", batches=[{"rows": pu_seed}])))

    ap_seed = [[f"2024-02-0{d}", k, f"v{k}"] for d in (1, 2) for k in range(5)]
    cases["w_ap"] = TableCase("w_ap", "append", wh, written=ap_seed)
    cmds.append(("create_table", t("w_ap", schema=_schema(
        [("d", "DATE"), ("k", "BIGINT"), ("v", "STRING")], parts=("d",), bucket=-1))))
    cmds.append(("write", t("w_ap", batches=[{"rows": ap_seed}])))

    apb_seed = [[p, k, f"v{k}"] for p in ("0.50", "12.00") for k in range(8)]
    cases["w_apb"] = TableCase("w_apb", "append", wh, written=apb_seed)
    cmds.append(("create_table", t("w_apb", schema=_schema(
        [("p", "DECIMAL(6, 2)"), ("k", "INT"), ("v", "STRING")], parts=("p",),
        **{"bucket": 2, "bucket-key": "k", "file.format": "orc"}))))
    cmds.append(("write", t("w_apb", batches=[{"rows": apb_seed}])))

    meta_seed = [[p, k, f"m{k}"] for p in ("a", "b") for k in range(20)]
    cases["meta_pk"] = TableCase("meta_pk", "pk", wh, written=meta_seed)
    cmds.append(("create_table", t("meta_pk", schema=_schema(
        [("p", "STRING NOT NULL"), ("k", "INT NOT NULL"), ("v", "STRING")], pk=("p", "k"), parts=("p",),
        bucket=2))))
    cmds.append(("write", t("meta_pk", batches=[{"rows": meta_seed}])))

    # every scalar/nested type as key, partition or value (partition by BOOLEAN, BIGINT, TIMESTAMP, DOUBLE, TINYINT)
    cases["w_types"] = TableCase("w_types", "pk", wh, written=[types_row(i, "java") for i in range(12)])
    cmds.append(("create_table", t("w_types", schema=_schema(TYPE_FIELDS, pk=TYPE_PK, parts=TYPE_PARTS, bucket=4))))
    cmds.append(("write", t("w_types", batches=[{"rows": cases["w_types"].written}])))

    dv_seed = [[p, k, f"d{k}"] for p in ("a", "b") for k in range(10)]
    cases["w_dv"] = TableCase("w_dv", "pk-dv", wh, written=dv_seed)
    cmds.append(("create_table", t("w_dv", schema=_schema(
        [("p", "STRING NOT NULL"), ("k", "INT NOT NULL"), ("v", "STRING")], pk=("p", "k"), parts=("p",),
        **{"bucket": 2, "deletion-vectors.enabled": True}))))
    cmds.append(("write", t("w_dv", batches=[{"rows": dv_seed}])))

    # conflict test: level-0 files that a Java compaction will replace while we plan
    conf_seed = [[k, f"c{k}"] for k in range(10)]
    cases["conflict_pk"] = TableCase("conflict_pk", "pk", wh, written=conf_seed)
    cmds.append(("create_table", t("conflict_pk", schema=_schema(
        [("k", "INT NOT NULL"), ("v", "STRING")], pk=("k",), bucket=1))))
    cmds.append(("write", t("conflict_pk", batches=[{"rows": conf_seed[:5]}, {"rows": conf_seed[5:]}])))
    return cmds, cases


READ_ONLY = ("pk_dv", "pk_dv_orc", "pk_lv", "pk_pu", "pk_agg", "pk_first", "ap", "ap_b", "py_pk", "py_ap")


def _pypaimon_build(wh: str, cases: dict[str, TableCase]) -> None:
    """Two tables written by pypaimon 2.1.0 (scanned by Java in the same session call)."""
    import pyarrow as pa

    from tests import pypaimon_util as pu

    t = pu.create_table(wh, f"{DB}.py_pk", pa.schema([("p", pa.string()), ("id", pa.int32()), ("v", pa.string()),
                                                      ("x", pa.float64())]),
                        partition_keys=["p"], primary_keys=["p", "id"], options={"bucket": "2"})
    pu.write(t, {"p": ["a"] * 6 + ["b"] * 3, "id": list(range(6)) + [0, 1, 2], "v": [f"v{i}" for i in range(9)],
                 "x": [i / 3 for i in range(9)]})
    pu.write(t, {"p": ["a", "a", "c"], "id": [1, 7, 0], "v": ["u1", "u7", "c0"], "x": [None, 1.0, 2.0]})
    pu.write(t, {"p": ["b"], "id": [2], "v": [None], "x": [9.5]})
    cases["py_pk"] = TableCase("py_pk", "pk", wh)

    # DECIMAL(20, 3), not (12, 3): pypaimon writes p <= 18 decimals as dictionary-encoded FIXED_LEN_BYTE_ARRAY,
    # which Java 0.9's Parquet reader cannot decode (UnsupportedOperationException in decodeToLong)
    a = pu.create_table(wh, f"{DB}.py_ap", pa.schema([("d", pa.date32()), ("k", pa.int64()),
                                                      ("amt", pa.decimal128(20, 3))]),
                        partition_keys=["d"], options={"bucket": "-1"})
    for i in range(3):
        pu.write(a, {"d": [dt.date(2024, 1, 1 + i), dt.date(2024, 1, 1)], "k": [i, 100 + i],
                     "amt": [Decimal(f"{i}.125"), None]})
    cases["py_ap"] = TableCase("py_ap", "append", wh)


def _ids(directory: Path, prefix: str) -> list[str]:
    """Suffixes of the files named <prefix>* (listed directly, not through the code under test)."""
    if not directory.is_dir():
        return []
    return [n[len(prefix):] for n in os.listdir(directory) if n.startswith(prefix)]


@pytest.fixture(scope="session")
def java_tables(tmp_path_factory) -> dict[str, TableCase]:
    reason = jh.skip_reason()
    if reason:
        pytest.skip(reason)
    wh = str(tmp_path_factory.mktemp("java-wh"))
    cmds, cases = _java_build(wh)
    jh.run_many(cmds)
    _pypaimon_build(wh, cases)
    # every snapshot and tag of the read-only tables: scan + read, in one JVM
    queries: list[tuple[str, tuple]] = []
    commands: list[tuple[str, dict]] = []
    for name in READ_ONLY:
        c = cases[name]
        base = {"warehouse": wh, "database": DB, "table": name}
        keys = [("snapshot", int(i)) for i in _ids(c.path / "snapshot", "snapshot-")]
        keys += [("tag", n) for n in _ids(c.path / "tag", "tag-")]
        for key in sorted(keys, key=str):
            sel = {"snapshot_id": key[1]} if key[0] == "snapshot" else {"tag": key[1]}
            commands.append(("scan", {**base, **sel}))
            commands.append(("read", {**base, **sel}))
            queries.append((name, key))
    answers = jh.run_many(commands)
    for i, (name, key) in enumerate(queries):
        cases[name].scans[key] = answers[2 * i]
        cases[name].reads[key] = answers[2 * i + 1]
    return cases
