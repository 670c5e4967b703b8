#!/usr/bin/env bash
# The project's own entry point. On a fresh machine (Python >= 3.11, Java 17) it creates the virtual env,
# installs everything the project needs, then runs what was asked:
#   ./dev.sh demo   build a sample warehouse and run the nightly maintenance job end to end
#   ./dev.sh test   run the whole test suite, every proof, on 2 pytest-xdist workers (what CI runs:
#                   CI=true ./dev.sh test; PAIMON_OPS_TEST_WORKERS=N chooses, 0 runs it serially)
#   ./dev.sh test --fast   the edit loop's lane: leaves out every test that starts a server or a JVM (Spark, Connect,
#                   cluster, Java, Hive, JDBC, REST, moto, Airflow, webserver, kill -9, docs: tests/lanes.py marks
#                   them), a few minutes on 2 cores; refused under CI=true. Extra arguments go to pytest.
#   ./dev.sh docs [serve]   build the documentation site into site/ (strict), or serve it on http://127.0.0.1:8000
#   ./dev.sh airflow-env   create / update .venv-airflow (Airflow 3 + paimon-ops[airflow,hive]; the Airflow tests call it)
#   ./dev.sh help   this text
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

pick_python() {
  for c in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$c"; return
    fi
  done
  echo "paimon-ops needs Python >= 3.11 on PATH (or PYTHON=/path/to/python3.11)" >&2; exit 1
}

ensure_env() {
  if [ ! -x .venv/bin/python ]; then
    "$(pick_python)" -m venv .venv
  fi
  # Reinstall only when the dependency declaration changed.
  local stamp=.venv/.paimon-ops-installed want
  want=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[test]"
    echo "$want" > "$stamp"
  fi
  command -v java >/dev/null 2>&1 || { echo "paimon-ops needs Java 17 (java on PATH) for Spark" >&2; exit 1; }
  export PYSPARK_PYTHON="$ROOT/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$ROOT/.venv/bin/python"
  export SPARK_LOCAL_IP=127.0.0.1
  export PATH="$ROOT/.venv/bin:$PATH"
}

# Airflow cannot share .venv: apache-airflow-core needs cachetools >= 6, pypaimon 2.1.0 (a test reader) < 6. The
# Airflow tests drive their own env through subprocesses (airflow db migrate / dags test / scheduler / triggerer);
# it is created on first need (tests/airflow calls `./dev.sh airflow-env`), re-installed when pyproject.toml changes.
ensure_airflow_env() {
  # test workers ask for it at once on a fresh machine: one installs, the others wait for it
  exec 9>.venv-airflow.lock
  flock 9
  if [ ! -x .venv-airflow/bin/python ]; then
    "$(pick_python)" -m venv .venv-airflow
  fi
  local stamp=.venv-airflow/.paimon-ops-installed want
  want=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "installing .venv-airflow (Airflow 3 + paimon-ops[airflow,hive])" >&2
    .venv-airflow/bin/python -m pip install -q --upgrade pip
    .venv-airflow/bin/python -m pip install -q -e ".[airflow,hive]"  # hive: the Hive catalog test of a killed task
    echo "$want" > "$stamp"
  fi
}

# pytest-xdist workers for a test run: 2 (a test waiting for a server or a JVM leaves its core to the other worker;
# each worker starts its own Spark session, metastore and servers when it needs them, so more workers need more
# memory: 2 is what the suite is measured and proven with); PAIMON_OPS_TEST_WORKERS=N overrides, 0 runs serially in
# this process. Nothing when the caller chose (-n, -p no:xdist). A whole module runs on one worker (--dist loadfile:
# its module fixtures are built once).
test_workers() {
  local a
  for a in "$@"; do
    case "$a" in -n|-n[0-9]*|--numprocesses*|no:xdist|--pdb|--trace) return 0;; esac
  done
  local n=${PAIMON_OPS_TEST_WORKERS:-2}
  [ "$n" = "0" ] || echo "-n $n --dist loadfile --no-loadscope-reorder"  # longest modules first: tests/lanes.py
}

is_ci() { case "${CI:-}" in 1|true|TRUE|True|yes) return 0;; *) return 1;; esac; }

# Debian packages the proofs need: a JDK with javac (the Java Paimon 0.9 harness is compiled by the tests),
# headless Chromium + ChromeDriver (the Dagster UI test), and the JDBC catalogs' databases (PostgreSQL and MariaDB
# servers, which the tests start themselves on free ports, and the JDBC drivers Java 0.9's JdbcCatalog uses).
# Installed when missing and running as root; under CI=true anything still missing stops the run here (the tests
# would fail on it anyway, later and less clearly). No service is started by the installation (policy-rc.d).
apt_install() {
  [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 || return 1
  echo "installing $* for the test suite" >&2
  local policy=/usr/sbin/policy-rc.d added=""
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && added=1; fi
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >&2 || true
  [ -z "$added" ] || rm -f "$policy"
}

has_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
has_mariadb() { command -v mariadb-install-db >/dev/null 2>&1 && { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }; }

ensure_test_prerequisites() {
  if ! command -v javac >/dev/null 2>&1 && [ ! -x "${JAVA_HOME:-/nonexistent}/bin/javac" ]; then
    apt_install openjdk-17-jdk-headless || true
  fi
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt_install chromium chromium-driver || true
  fi
  if ! has_postgres || ! has_mariadb || [ ! -f /usr/share/java/sqlite-jdbc.jar ] || \
     [ ! -f /usr/share/java/postgresql.jar ] || [ ! -f /usr/share/java/mariadb-java-client.jar ]; then
    apt_install postgresql mariadb-server libxerial-sqlite-jdbc-java libpostgresql-jdbc-java libmariadb-java || true
  fi
  local missing=()
  command -v javac >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] || missing+=("javac (a JDK 17)")
  command -v chromium >/dev/null 2>&1 || missing+=("chromium")
  command -v chromedriver >/dev/null 2>&1 || missing+=("chromedriver")
  has_postgres || missing+=("postgresql")
  has_mariadb || missing+=("mariadb-server")
  [ -f /usr/share/java/sqlite-jdbc.jar ] || missing+=("libxerial-sqlite-jdbc-java")
  [ -f /usr/share/java/postgresql.jar ] || missing+=("libpostgresql-jdbc-java")
  [ -f /usr/share/java/mariadb-java-client.jar ] || missing+=("libmariadb-java")
  if [ ${#missing[@]} -gt 0 ]; then
    if is_ci; then
      echo "paimon-ops tests: missing ${missing[*]}; under CI=true every proof must run (install them, or run as root)" >&2
      exit 1
    fi
    echo "warning: missing ${missing[*]}: the tests that need them will be skipped (they fail under CI=true)" >&2
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    ensure_env
    exec .venv/bin/python demo.py "$@"
    ;;
  test)
    args=() fast=""
    for a in "$@"; do
      if [ "$a" = "--fast" ]; then fast=1; else args+=("$a"); fi
    done
    if [ -n "$fast" ] && is_ci; then
      echo "./dev.sh test --fast leaves proofs out; under CI=true every proof runs (./dev.sh test)" >&2; exit 2
    fi
    ensure_env
    if [ -n "$fast" ]; then
      args=(-m "$(.venv/bin/python -c 'from tests.lanes import FAST_LANE; print(FAST_LANE)')" "${args[@]}")
    else
      ensure_test_prerequisites
    fi
    exec .venv/bin/python -m pytest $(test_workers "${args[@]}") "${args[@]}"
    ;;
  docs)
    ensure_env
    export NO_MKDOCS_2_WARNING=1  # MkDocs' banner about its successors: the choice is argued in docs/project/contributing.md
    case "${1:-build}" in
      build) exec .venv/bin/mkdocs build --strict ;;
      serve) exec .venv/bin/mkdocs serve --strict -a 127.0.0.1:8000 ;;
      *) echo "usage: ./dev.sh docs [build|serve]" >&2; exit 2 ;;
    esac
    ;;
  airflow-env)
    ensure_airflow_env
    ;;
  help|-h|--help)
    sed -n '2,/^set /s/^# \{0,1\}//p' "$ROOT/dev.sh"  # the header above
    ;;
  *)
    echo "usage: ./dev.sh demo|test [--fast]|docs|airflow-env|help [args]" >&2; exit 2
    ;;
esac
