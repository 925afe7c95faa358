"""Every security case runs under a deadline: a hostile input must never hang the suite."""

from __future__ import annotations

import pytest

#: Seconds a security case may take before it fails (a hang is a finding, not a wait).
DEADLINE_SECONDS = 120


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/security/" in item.nodeid and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEADLINE_SECONDS))
