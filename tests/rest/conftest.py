"""Fixtures of the REST catalog tests: the spec server (tests/rest/server.py) as a real process per test."""
from __future__ import annotations

import pytest

from tests.rest.fixture import rest_server


@pytest.fixture
def rest(tmp_path):
    """The spec server over a fresh local warehouse (bearer and DLF credentials accepted)."""
    wh = tmp_path / "warehouse"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "rest-state") as server:
        yield server


# the real S3-compatible server (moto_server) of the object-store tests, for tables whose storage credentials come
# from the catalog
from tests.objectstore.conftest import s3_server  # noqa: E402,F401
