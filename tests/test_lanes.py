"""The test lanes (tests/lanes.py) hold: markers are inferred from the fixtures and helpers a test uses, a test that
starts a process its markers do not name fails (so the fast lane starts no server and no JVM), and the fast lane's
selection leaves out every process kind but the light one. Proven on inner pytest runs (pytester) of small files."""
from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests import lanes

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[1]

HOOKS = "from tests.conftest import (pytest_configure, pytest_collection_modifyitems, pytest_runtest_protocol,\n" \
        "                            pytest_runtest_makereport, spark, warehouse)  # noqa: F401\n"


@pytest.fixture
def inner(pytester):
    pytester.makeconftest(HOOKS)
    return pytester


def _markers(items) -> dict[str, set[str]]:
    return {it.name: lanes.item_kinds(it) for it in items}


def test_markers_follow_fixtures_and_helpers(inner):
    inner.makepyfile(helpers=textwrap.dedent('''
        from tests.interop import java_harness as jh

        def java_table_rows(wh):
            return jh.run("read", {"warehouse": wh})

        class Builder:
            def build(self, wh):
                return java_table_rows(wh)
    '''))
    inner.makepyfile(test_inferred=textwrap.dedent('''
        import signal, subprocess, sys
        import pytest
        from helpers import Builder, java_table_rows

        def _make(wh):
            return java_table_rows(wh)

        def test_plain(warehouse):
            assert warehouse

        def test_helper_two_levels_down(tmp_path):
            _make(tmp_path)

        def test_helper_class(tmp_path):
            Builder().build(tmp_path)

        def test_spark_fixture(spark):
            pass

        @pytest.mark.parametrize("kind", ["local", "spark"])
        def test_spark_fixture_asked_for(request, kind):
            if kind == "spark":
                request.getfixturevalue("spark")

        def test_browser_imported_in_the_function(tmp_path):
            from tests.dagster import ui_util as ui
            ui.Browser(tmp_path / "chromium", tmp_path / "log")

        def test_cli_subprocess():
            subprocess.run([sys.executable, "-c", "pass"])

        def test_kills(tmp_path):
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            p.send_signal(signal.SIGKILL)

        @pytest.fixture(scope="module")
        def built(tmp_path_factory):
            return _make(tmp_path_factory.mktemp("w"))

        def test_module_fixture(built):
            pass
    '''))
    items, _ = inner.inline_genitems("-p", "no:cacheprovider")
    kinds = _markers(items)
    assert kinds["test_plain"] == set()
    assert kinds["test_helper_two_levels_down"] == {"java"}
    assert kinds["test_helper_class"] == {"java"}
    assert kinds["test_spark_fixture"] == {"spark"}
    assert kinds["test_spark_fixture_asked_for[spark]"] == {"spark"}  # (its `local` case too: one function)
    assert kinds["test_browser_imported_in_the_function"] == {"webserver"}
    assert kinds["test_cli_subprocess"] == {"subprocess"}
    assert kinds["test_kills"] == {"subprocess", "kill9"}
    assert kinds["test_module_fixture"] == {"java"}


def test_an_unmarked_test_that_starts_a_process_fails(inner):
    inner.makepyfile(test_hidden=textwrap.dedent('''
        import importlib, sys

        def test_hidden_start():
            # reached through names the inference cannot read: only the guard sees it
            importlib.import_module("sub" + "process").run([sys.executable, "-c", "pass"], check=True)

        def test_nothing_started():
            assert sum(range(10)) == 45
    '''))
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_hidden_start*started*-c pass*without the marker a process kind*"])


def test_a_jvm_needs_its_own_kind(inner, tmp_path):
    java = tmp_path / "bin" / "java"  # a stand-in: the guard judges the program by its name, before it runs
    java.parent.mkdir()
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    python = java.with_name("python3")  # a stand-in for the paimon-ops command's interpreter
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    inner.makepyfile(test_jvm=textwrap.dedent(f'''
        import importlib
        import pytest

        def _run(argv):
            importlib.import_module("sub" + "process").run(argv, check=True)

        @pytest.mark.subprocess
        def test_light_marker_starts_a_jvm():
            _run([{str(java)!r}, "-version"])

        @pytest.mark.java
        def test_java_marker_starts_a_jvm():
            _run([{str(java)!r}, "-version"])

        @pytest.mark.subprocess
        def test_light_marker_runs_the_cli_on_local_spark():
            _run([{str(python)!r}, "-m", "paimon_ops.cli", "compact", "wh", "db.t", "--spark-master", "local[1]"])
    '''))
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*test_light_marker_starts_a_jvm*without the marker java or spark*"])
    result.stdout.fnmatch_lines(["*test_light_marker_runs_the_cli_on_local_spark*--spark-master local[[]1[]]*"
                                 "without the marker spark or connect or cluster*"])


def test_a_light_test_that_leaves_a_server_running_fails(inner, tmp_path, monkeypatch):
    """`subprocess` is for processes that end: one still running after the test's teardown (a server started by a
    plain `python` command, which the program names cannot tell from a CLI call) fails the test, naming it."""
    monkeypatch.setattr(lanes, "LINGER_GRACE", 0.5)
    pid_file = tmp_path / "server.pid"
    inner.makepyfile(test_linger=textwrap.dedent(f'''
        import subprocess, sys
        import pytest

        @pytest.mark.subprocess
        def test_starts_a_server_in_disguise():
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            open({str(pid_file)!r}, "w").write(str(p.pid))

        @pytest.mark.subprocess
        def test_short_lived():
            subprocess.run([sys.executable, "-c", "pass"], check=True)
    '''))
    try:
        result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 9)  # the stand-in server, stopped by its pid
    result.assert_outcomes(passed=2, errors=1)  # its call passed, its teardown fails
    result.stdout.fnmatch_lines(["*test_starts_a_server_in_disguise*left*time.sleep(120)*running after the test*"])


def test_a_server_fixture_refuses_an_unmarked_test(inner):
    inner.makepyfile(test_require=textwrap.dedent('''
        from tests import lanes

        def test_asks_for_spark_without_the_marker():
            lanes.require("spark")  # what the spark fixture does first
    '''))
    result = inner.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*starts 'spark'*but is not marked spark*"])


def test_the_fast_lane_leaves_out_every_server_and_jvm(inner):
    inner.makepyfile(test_kinds="import pytest\n" + "".join(
        f"@pytest.mark.{kind}\ndef test_{kind}():\n    pass\n\n" for kind in lanes.KINDS) +
        "@pytest.mark.slow\ndef test_slow():\n    pass\n\ndef test_plain():\n    pass\n")
    result = inner.runpytest_inprocess("-p", "no:cacheprovider", "-m", lanes.FAST_LANE, "-v")
    result.assert_outcomes(passed=2, deselected=len(lanes.KINDS))
    result.stdout.fnmatch_lines(["*test_subprocess PASSED*", "*test_plain PASSED*"])


def test_dev_sh_fast_lane_is_the_lanes_expression_and_ci_refuses_it():
    """`./dev.sh test --fast` selects with FAST_LANE (one definition), and under CI=true it refuses (exit 2, before
    it installs or runs anything): CI runs every proof."""
    dev = REPO / "dev.sh"
    assert "from tests.lanes import FAST_LANE" in dev.read_text()
    proc = subprocess.run(["bash", str(dev), "test", "--fast"], env={**os.environ, "CI": "true"}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "under CI=true every proof runs" in proc.stderr
