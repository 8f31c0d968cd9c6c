"""What every test of the suite shares: the environment each test found is the one it
leaves (commands run in-process export ``$STREAMS_SCHEMAS`` for the catalogs they load)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from streams.schemas import SCHEMAS_DIR_ENV


@pytest.fixture(autouse=True)
def _schemas_folder_kept() -> Iterator[None]:
    """Put ``$STREAMS_SCHEMAS`` back as it was: a command a test runs with ``CliRunner``
    sets it (``streams.cli._common.use_schemas``), and the next test in the same process,
    a pytest-xdist worker's, would read another folder."""
    before = os.environ.get(SCHEMAS_DIR_ENV)
    yield
    if before is None:
        os.environ.pop(SCHEMAS_DIR_ENV, None)
    else:
        os.environ[SCHEMAS_DIR_ENV] = before
