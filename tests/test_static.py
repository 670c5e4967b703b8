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




def _cycles(graph) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
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


def test_no_new_import_cycles():
    """Module imports (at module level or inside functions) form no cycle."""
    import grimp

    graph = grimp.build_graph("paimon_ops", exclude_type_checking_imports=True, cache_dir=None)
    found = _cycles(graph)
    assert not found, sorted(map(sorted, found))


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
