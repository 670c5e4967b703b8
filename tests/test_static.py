"""The engine and its tests pass the linter (ruff), the engine the type checker (mypy) and the layering contracts
(import-linter), all configured in pyproject.toml."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff():
    r = _run("ruff", "check", "paimon_ops", "tests", "docs/hooks")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy():
    r = _run("mypy", "paimon_ops")
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_layers():
    """The contracts of [tool.importlinter]: the layers, the engine never importing Dagster or Airflow, the two
    integrations independent of each other."""
    r = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr




# The libraries imported inside functions, and why (one line each). Everything else, paimon_ops included, is imported
# at module level, so the graph below is the real one.
LAZY_LIBRARIES = {
    "pyspark": "optional ([spark]); starts a JVM: imported where Spark is used",
    "pymetastore": "optional ([hive]): the Hive Metastore's Thrift client, loaded when a Hive catalog connects",
    "thrift": "optional ([hive]): pymetastore's transport, loaded when a Hive catalog connects",
    "dagster": "the Dagster integration's own dependency, imported where an event is built",
    "airflow": "optional ([airflow]): the provider's modules load without it (provider info, DAG parsing)",
    "obstore": "native object-store client: loaded only when an object store is opened",
    "datafusion": "native engine: loaded only when many manifests are decoded at once",
    "pandas": "optional (pyarrow's to_pandas): only for values pandas must convert",
    "pyarrow": "format readers (parquet, orc, compute) loaded by the paths that read that format",
    "fastavro": "the Avro data-file writer/reader, loaded only for avro data files",
    "numpy": "loaded with pyarrow's compute by the columnar manifest decoder only",
}


def import_graph() -> tuple[dict[str, set[str]], list[str]]:
    """The import graph of paimon_ops from its source: module -> modules it imports (at module level or in a
    function; TYPE_CHECKING blocks excluded). A package's __init__ is a node of its own: `from paimon_ops import x`
    is an edge to paimon_ops/__init__.py (and to paimon_ops.x when x is a module). Also: every function-level import
    of anything but a library of LAZY_LIBRARIES, as "path:line"."""
    import ast

    files = {}
    for path in sorted((REPO / "paimon_ops").rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in files}
    bad_lazy: list[str] = []
    for mod, path in files.items():
        text = path.read_text()
        tree = ast.parse(text)
        lines = text.split("\n")
        type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                     and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        in_function = {id(n) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(node)}
        package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in type_only or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = mod.split(".") if package else mod.split(".")[:-1]
                    base = ".".join(up[:len(up) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            graph[mod] |= {t for t in targets if t in files and t != mod}
            if id(node) in in_function:
                itself = targets[0] == mod and "#" in lines[node.end_lineno - 1]  # (re-imported on a Spark executor)
                if targets[0].split(".")[0] not in LAZY_LIBRARIES and not itself:
                    bad_lazy.append(f"{path.relative_to(REPO)}:{node.lineno} {ast.unparse(node)}")
    return graph, bad_lazy


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {m: sorted(graph[m]) for m in sorted(graph)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    for root in adj:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in adj[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_import_cycle_package_inits_counted():
    """The modules of paimon_ops, package __init__ modules included, import one another without a cycle — imports in
    functions counted too."""
    graph, _ = import_graph()
    found = _cycles(graph)
    assert not found, sorted(map(sorted, found))


def test_imports_in_functions_are_only_the_lazy_libraries():
    """An import inside a function hides an edge of the graph: only the libraries of LAZY_LIBRARIES (optional, or
    heavy and needed by some paths only; each with its reason there) are imported inside functions."""
    _, bad = import_graph()
    assert not bad, bad


def test_the_engine_never_imports_spark_dagster_or_airflow_at_module_level():
    """pyspark is imported only inside the functions that start or use Spark (`import paimon_ops` never starts a
    JVM); Dagster and Airflow only by their integration packages (also the import-linter contracts)."""
    import ast

    heavy = ("pyspark", "dagster", "airflow")
    bad = []
    for path in sorted((REPO / "paimon_ops").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("paimon_ops/dagster/", "paimon_ops/airflow/")):
            continue
        todo = list(ast.parse(path.read_text()).body)
        while todo:  # module level, including if / try blocks; not function or class bodies
            node = todo.pop()
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                continue  # run as a script (spark_daemon), never imported
            if isinstance(node, (ast.If, ast.Try)):
                todo += [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                         *(s for h in getattr(node, "handlers", []) for s in h.body)]
                continue
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{rel}:{node.lineno} {n}" for n in names if n.split(".")[0] in heavy]
    assert not bad, bad


def test_the_documents_the_code_cites_are_in_the_repository():
    """Comments cite the specs (format.md, maintenance.md, design.md) by section, and docs pages by their path
    (docs/guides/….md): they live in docs/."""
    import re

    cited: set[str] = set()
    for path in (REPO / "paimon_ops").rglob("*.py"):
        cited |= set(re.findall(r"(?<![\w/-])((?:docs/)?[a-z_/-]+\.md)\b", path.read_text()))
    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    import reference  # the pages the docs build generates (docs/reference/options.md, …)
    generated = {f"docs/{page}" for page in reference.PAGES}
    missing = [c for c in cited if c not in generated
               and not (REPO / c if c.startswith("docs/") else REPO / "docs" / c).is_file()]
    assert cited and not missing, sorted(missing)
