"""Test lanes: every test that starts a process is marked with what it starts, automatically, and a guard proves it.

Markers (one per kind of process, declared here and nowhere else) are applied at collection from what a test uses:
the fixtures in its closure (`spark`, `hive_metastore`, `s3_server`, …), and the helpers its code and its fixtures'
code reference — found by reading the functions' names (`co_names`) and following the test package's own helper
functions and classes transitively (a module-level `_build()` that calls the Java harness makes every test calling it
`java`). A module may also say `pytestmark = pytest.mark.<kind>` itself.

The guard checks the result while the tests run: every process a test starts (`subprocess`, `os.fork`,
`os.posix_spawn`, `os.system`, multiprocessing's spawn) is checked against the running test's markers — a test with
no process marker that starts anything fails, naming the command; a JVM, a Spark launcher, Airflow, moto, Chromium,
a database server or MkDocs needs its own kind; a process a light test started that still runs after the test's
teardown is a server in disguise and fails the test too. The fixtures and helpers that start a server assert their
kind as well (`require`). So the fast lane (`./dev.sh test --fast`: no process kind but `subprocess`) cannot silently
grow a JVM or a server.

The full suite (`./dev.sh test`, CI) runs on 2 pytest-xdist workers, a whole module per worker: each worker
starts its own Spark session and servers when its tests need them, on ports claimed once per run (`tests/net.py`), in
its own temporary directories. Modules run longest first (`LONG_MODULES`), so that no long module is left for the end.
"""
from __future__ import annotations

import functools
import inspect
import os
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any, Iterable

import pytest

# kind -> what the marked test starts. `subprocess` is the light kind the fast lane keeps (a `paimon-ops` command,
# a linter, a small helper script: a Python start-up of a second or two); every other kind is a server or a JVM.
KINDS: dict[str, str] = {
    "spark": "starts (or shares) a local SparkSession: a JVM",
    "connect": "starts (or shares) a Spark Connect server process",
    "cluster": "starts (or shares) a standalone Spark master and worker",
    "java": "runs Java Paimon 0.9 through the interop harness (one JVM serves a test process's calls)",
    "hive": "starts (or shares) a Hive Metastore (a JVM)",
    "jdbc": "starts (or shares) PostgreSQL / MariaDB servers",
    "rest": "starts the REST catalog spec server",
    "moto": "starts (or shares) the S3-compatible moto_server",
    "airflow": "runs Airflow 3 processes (its env, `airflow` commands, a scheduler)",
    "webserver": "starts a web server for headless Chromium (the Dagster UI, the docs site)",
    "kill9": "kills a running paimon-ops process with SIGKILL",
    "docs": "builds the documentation site (MkDocs)",
    "subprocess": "starts a short-lived process: the paimon-ops command, a linter, a helper script",
}
HEAVY = tuple(k for k in KINDS if k != "subprocess")
FAST_LANE = "not (" + " or ".join(HEAVY) + " or slow)"
OTHER_MARKERS = {"slow": "CPU-heavy without starting a server (large property searches); not in the fast lane"}

# fixtures (by name, anywhere in a test's closure) that start or share a process
FIXTURE_KINDS: dict[str, str] = {
    "spark": "spark",
    "connect_server": "connect",
    "standalone_cluster": "cluster",
    "hive_metastore": "hive",
    "postgres": "jdbc",
    "mariadb": "jdbc",
    "s3_server": "moto",
    "airflow_bin": "airflow",
    "java_tables": "java",
}
# modules whose every function or class starts a process of one kind (referenced by a test or a helper it calls)
MODULE_KINDS: dict[str, str] = {
    "tests.interop.java_harness": "java",
    "tests.hive_metastore": "hive",
    "tests.spark_cluster": "cluster",
    "tests.spark_connect": "connect",
    "tests.catalog.servers": "jdbc",
    "tests.rest.fixture": "rest",
    "selenium": "webserver",
    "tests.dagster.ui_util": "webserver",  # the browser and webserver helpers (Dagster's, Airflow's, the docs site's)
    "tests.airflow.conftest": "airflow",
    "subprocess": "subprocess",
    "multiprocessing": "subprocess",
    "concurrent.futures.process": "subprocess",
}
# single objects of the code under test that start a process
OBJECT_KINDS: dict[str, str] = {
    "paimon_ops.execution.spark_session.local_spark": "spark",
    "paimon_ops.execution.spark_session.connect_spark": "connect",
    "pyspark.sql.session.SparkSession": "spark",
}
# names whose mere use means a kind (attribute or global)
NAME_KINDS: dict[str, str] = {"SIGKILL": "kill9", "mkdocs": "docs", "ProcessPoolExecutor": "subprocess"}
# directories all of whose tests start a kind (the directory exists for it)
DIRECTORY_KINDS: dict[str, str] = {"airflow": "airflow", "docs": "docs", "hive": "hive"}


# ------------------------------------------------------------------------------------------- inference (collection)
def _qualname(obj: Any) -> str | None:
    mod = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None)
    return f"{mod}.{name}" if isinstance(mod, str) and isinstance(name, str) else None


def _module_kind(module_name: str | None) -> str | None:
    if not module_name:
        return None
    for m, kind in MODULE_KINDS.items():
        if module_name == m or module_name.startswith(m + "."):
            return kind
    return None


class _Inference:
    """Kinds reached from functions, following the test package's helpers (memoised per object). `names`: whether
    NAME_KINDS count (for tests and their helpers; a fixture that stops its server with SIGKILL kills nothing the
    test is about)."""

    def __init__(self, root: Path, names: bool = True) -> None:
        self.root, self.names = root, names
        self._side: dict[str, bool] = {}
        self._memo: dict[int, frozenset[str]] = {}
        self._busy: set[int] = set()

    def test_side(self, module_name: Any) -> bool:
        """Whether a module is the tests' own code (followed): under the root directory, neither the code under
        test nor an installed package."""
        if not isinstance(module_name, str):
            return False
        if module_name not in self._side:
            file = getattr(sys.modules.get(module_name), "__file__", None)
            path = Path(file).resolve() if file else None
            self._side[module_name] = bool(
                path and path.is_relative_to(self.root) and not path.is_relative_to(self.root / "paimon_ops")
                and ".venv" not in path.relative_to(self.root).parts[:1])
        return self._side[module_name]

    def of_object(self, obj: Any) -> frozenset[str]:
        key = id(obj)
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:  # recursion: the outer call collects it
            return frozenset()
        self._busy.add(key)
        try:
            kinds = self._of_object(obj)
        finally:
            self._busy.discard(key)
        self._memo[key] = kinds
        return kinds

    def _of_object(self, obj: Any) -> frozenset[str]:
        if isinstance(obj, types.ModuleType):
            kind = _module_kind(obj.__name__)
            return frozenset([kind] if kind else [])
        q = _qualname(obj)
        if q in OBJECT_KINDS:
            return frozenset([OBJECT_KINDS[q]])
        kind = _module_kind(getattr(obj, "__module__", None))
        if kind:
            return frozenset([kind])
        if not self.test_side(getattr(obj, "__module__", None)):
            return frozenset()  # the code under test: its process starts are checked at run time
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, functools.partial):
            return self.of_object(obj.func)
        func = inspect.unwrap(obj) if callable(obj) else obj
        if isinstance(func, types.FunctionType):
            return self.of_code(func.__code__, func.__globals__)
        if isinstance(func, type):
            out: set[str] = set()
            for klass in func.__mro__:
                if not self.test_side(klass.__module__):
                    continue
                for member in vars(klass).values():
                    if isinstance(member, property):
                        member = member.fget
                    out |= self.of_object(member)
            return frozenset(out)
        return frozenset()

    def of_code(self, code: types.CodeType, globs: dict[str, Any]) -> frozenset[str]:
        out: set[str] = set()
        for name in code.co_names:
            if self.names and name in NAME_KINDS:
                out.add(NAME_KINDS[name])
            kind = _module_kind(name) or _module_kind(_imported_module(name))
            if kind:
                out.add(kind)
            if name in globs:
                out |= self.of_object(globs[name])
        asks_for_fixtures = "getfixturevalue" in code.co_names
        for const in code.co_consts:
            if isinstance(const, types.CodeType):  # nested functions, lambdas, comprehensions, classes
                out |= self.of_code(const, globs)
            elif asks_for_fixtures and isinstance(const, str) and const in FIXTURE_KINDS:
                # request.getfixturevalue("spark"): the fixture is not in the closure, and a session fixture another
                # test already made starts nothing, so the guard would catch it only when this test runs first
                out.add(FIXTURE_KINDS[const])
        return frozenset(out)


def _imported_module(name: str) -> str | None:
    """`from tests.interop import java_harness` inside a function names `java_harness`: the full module name."""
    for m in MODULE_KINDS:
        if m.rsplit(".", 1)[-1] == name and "." in m:
            return m
    return None


def _fixture_functions(item: pytest.Item) -> Iterable[tuple[str, Any]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for name in item.fixturenames:  # the closure
        for fdef in info.name2fixturedefs.get(name, ()):
            yield name, getattr(fdef, "func", None)


def kinds_of(item: pytest.Item, inference: _Inference, fixtures: _Inference) -> set[str]:
    kinds: set[str] = set()
    parts = item.nodeid.split("::", 1)[0].split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in DIRECTORY_KINDS:
        kinds.add(DIRECTORY_KINDS[parts[1]])
    for name, func in _fixture_functions(item):
        if name in FIXTURE_KINDS:
            kinds.add(FIXTURE_KINDS[name])
        if func is not None:
            kinds |= fixtures.of_object(func)
    function = getattr(item, "function", None)
    if function is not None:
        kinds |= inference.of_object(function)
    return kinds


# The longest modules (measured serially on 2 cores, 2026-11-29, seconds): handed to the workers first, a module at
# a time (--dist loadfile --no-loadscope-reorder), so that the run does not end with one worker on a long module while
# the other idles. A scheduling hint only: a module missing here (or renamed) just runs in collection order.
LONG_MODULES = (
    "tests/catalog/test_jdbc.py",  # 191
    "tests/dagster/test_webserver_e2e.py",  # 139
    "tests/safety/test_inconsistent_tables.py",  # 131
    "tests/airflow/test_dags.py",  # 107
    "tests/hive/test_hive_maintenance.py",  # 75
    "tests/lifecycle/test_spark_placement.py",  # 66
    "tests/cli/test_fleet.py",  # 63
    "tests/objectstore/test_faults_s3.py",  # 57
    "tests/test_static.py",  # 50
    "tests/compact/test_minor_random.py",  # 48
    "tests/lifecycle/test_lifecycle_properties.py",  # 46
    "tests/airflow/test_stack.py",  # 46
    "tests/interop/test_branches_java.py",  # 45
    "tests/docs/test_examples.py",  # 39
    "tests/lifecycle/test_rollback_time.py",  # 33
    "tests/hive/test_hive_dagster.py",  # 29
    "tests/dagster/test_packaging.py",  # 27
    "tests/compact/test_minor_java.py",  # 24
)


def longest_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the LONG_MODULES first, in that order, then the rest as collected (a module's tests
    stay together and in their order)."""
    rank = {m: i for i, m in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def apply_markers(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath)).resolve()
    inference, fixtures = _Inference(root), _Inference(root, names=False)
    for item in items:
        declared = {m.name for m in item.iter_markers() if m.name in KINDS}
        for kind in sorted(kinds_of(item, inference, fixtures) - declared):
            item.add_marker(getattr(pytest.mark, kind))


# ------------------------------------------------------------------------------------------- the guard (run time)
_current: pytest.Item | None = None
_violations: dict[str, list[str]] = {}
_lock = threading.Lock()
# processes started by a test with no heavy kind (the light `subprocess` kind, or none): they must have ended when
# the test's teardown is over — one still running is a server, which needs its own kind
_light_children: dict[str, list[subprocess.Popen]] = {}
LINGER_GRACE = 10.0  # seconds a light process may take to exit after its test (a busy machine)

# what each kind may start, by the program's name; a program not listed here needs any process kind
PROGRAMS: dict[str, tuple[str, ...]] = {
    "java": ("java", "spark", "connect", "cluster", "hive"),
    "spark-submit": ("spark", "connect", "cluster"),
    "spark-class": ("spark", "connect", "cluster"),
    "airflow": ("airflow",),
    "moto_server": ("moto",),
    "chromium": ("webserver",),
    "chromedriver": ("webserver",),
    "postgres": ("jdbc",), "initdb": ("jdbc",), "pg_ctl": ("jdbc",),
    "mariadbd": ("jdbc",), "mysqld": ("jdbc",), "mariadb-install-db": ("jdbc",),
    "mkdocs": ("docs",),
}


def item_kinds(item: pytest.Item) -> set[str]:
    return {m.name for m in item.iter_markers() if m.name in KINDS}


def _program(argv: Any) -> tuple[str, str]:
    """(the program's base name, the command line) — `python -m mkdocs` counts as mkdocs."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        words = [os.fsdecode(argv)]
    else:
        words = [os.fsdecode(a) for a in argv]
    line = " ".join(words)
    names = [os.path.basename(w.split()[0]) if w else "" for w in words[:1]]
    if len(words) > 2 and words[1] == "-m":
        names.append(words[2])
    for n in names:
        if n in PROGRAMS:
            return n, line
    # a paimon-ops command told to run on a local Spark starts its driver's JVM (a grandchild the guard cannot see)
    for flag, value in zip(words, words[1:]):
        if flag == "--spark-master" and value.startswith("local"):
            return "spark-submit", line
    return (names[-1] if names else ""), line  # `python -m X` is X


# the standard library's own probes of the machine: platform.architecture() runs `file -b`, ctypes.util.find_library
# runs ldconfig / gcc / ld — short-lived, no kind of the lanes'
STDLIB_PROBES = ("file -b ", "/sbin/ldconfig ", "ldconfig ", "gcc ", "cc ", "ld ", "uname ")


def _dagster_step_helper(line: str) -> bool:
    """Dagster's own helpers around every step run on a real instance: the compute-log capture (`tail -F` of the
    step's log files) and its orphan watcher — short-lived, ending with the step; no kind of the lanes' — and the
    standard library's probes (STDLIB_PROBES)."""
    return (line.startswith("tail -F ") and "/compute_logs/" in line) or \
        "dagster/_core/execution/scripts/watch_orphans.py" in line or line.startswith(STDLIB_PROBES)


# light programs any test may run without a marker: the paimon-ops command itself (short-lived, in the fast lane
# whether marked `subprocess` or not, also under a wrapper such as setpriv — `--spark-master local…` is the exception
# _program makes a Spark kind)
LIGHT_PROGRAMS = ("paimon_ops.cli", "paimon-ops", "paimon_ops.dagster.state")


def _check(argv: Any) -> None:
    item = _current
    if item is None:
        return
    program, line = _program(argv)
    light = program in LIGHT_PROGRAMS or (program not in PROGRAMS and " -m paimon_ops.cli " in f"{line} ")
    if _dagster_step_helper(line) or light:
        return
    kinds = item_kinds(item)
    allowed = PROGRAMS.get(program)
    if allowed is not None:
        if kinds & set(allowed):
            return
        need = " or ".join(allowed)
    elif kinds:
        return
    else:
        need = "a process kind"
    with _lock:
        _violations.setdefault(item.nodeid, []).append(
            f"started `{line[:300]}` without the marker {need} (tests/lanes.py infers markers from the fixtures and "
            "helpers a test uses: add the helper's module to MODULE_KINDS, or the fixture to FIXTURE_KINDS)")


def require(kind: str) -> None:
    """Called by a fixture or helper that starts a process of `kind`: the running test must carry the marker."""
    item = _current
    if item is not None and kind not in item_kinds(item):
        pytest.fail(f"{item.nodeid} starts {kind!r} ({KINDS[kind]}) but is not marked {kind}: tests/lanes.py infers "
                    "the marker from the fixtures and helpers a test uses — teach it this one", pytrace=False)


_installed = False


def install_guard() -> None:
    """Wrap every way this process starts another (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def _execute_child(self, args, *rest, **kw):
        _check(args)
        result = execute_child(self, args, *rest, **kw)
        item = _current
        if item is not None and not item_kinds(item) & set(HEAVY) and not _dagster_step_helper(_program(args)[1]):
            with _lock:
                _light_children.setdefault(item.nodeid, []).append(self)
        return result

    subprocess.Popen._execute_child = _execute_child  # type: ignore[attr-defined]

    def wrap(module: Any, name: str, argv_of) -> None:
        original = getattr(module, name, None)
        if original is None:
            return

        def wrapper(*a, **kw):
            _check(argv_of(a, kw))
            return original(*a, **kw)

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(module, name, wrapper)

    wrap(os, "fork", lambda a, kw: ["fork()"])
    wrap(os, "forkpty", lambda a, kw: ["forkpty()"])
    wrap(os, "posix_spawn", lambda a, kw: a[1] if len(a) > 1 else [a[0]])
    wrap(os, "posix_spawnp", lambda a, kw: a[1] if len(a) > 1 else [a[0]])
    wrap(os, "system", lambda a, kw: ["sh", "-c", a[0] if a else ""])
    import multiprocessing.util
    wrap(multiprocessing.util, "spawnv_passfds", lambda a, kw: a[1] if len(a) > 1 else [a[0]])


def check_start(argv: Any) -> None:
    """The guard's check of a process start made another way (tests/cli_forkserver.py forks the command line)."""
    _check(argv)


def check_lingering(item: pytest.Item) -> None:
    """After a test's teardown: a process its light kind allowed that is still running is a violation (named)."""
    with _lock:
        children = _light_children.pop(item.nodeid, [])
    for child in children:
        try:
            child.wait(timeout=LINGER_GRACE)
        except subprocess.TimeoutExpired:
            line = " ".join(map(os.fsdecode, child.args)) if isinstance(child.args, (list, tuple)) \
                else os.fsdecode(child.args)
            with _lock:
                _violations.setdefault(item.nodeid, []).append(
                    f"left `{line[:300]}` (pid {child.pid}) running after the test: a process that outlives its "
                    f"test is a server and needs its own kind ({', '.join(HEAVY)}), not `subprocess`")


def violations_of(item: pytest.Item) -> list[str]:
    with _lock:
        return _violations.pop(item.nodeid, [])


def set_current(item: pytest.Item | None) -> pytest.Item | None:
    """The test now running (the guard checks its markers); returns the one before."""
    global _current
    before, _current = _current, item
    return before
