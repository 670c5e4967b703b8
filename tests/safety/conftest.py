"""The CLI tests' sample warehouse, shared with the safety tests."""
from tests.cli.conftest import sample, sample_src  # noqa: F401 - fixtures
