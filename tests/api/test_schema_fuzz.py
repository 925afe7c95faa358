"""Schemathesis against the API's own OpenAPI schema, in process: no input may cause a 5xx.

The app is the one a non-loopback ``serve`` builds (every endpoint behind the token), so the
declared security is exercised too: ``ignored_auth`` sends each case again without the token
and with a wrong one and fails unless the API refuses it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from opencode_restore.api import create_app
from opencode_restore.config import load_config
from opencode_restore.store import open_store
from tests.store.builders import CLAUDE_COMPACT, GEMINI_CONTINUED, GEMINI_LEGACY

TOKEN = "fuzz-token-" + "x" * 24
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Examples per operation and generation mode, and the longest one example may take (a hang
#: guard, far above the few milliseconds an example takes).
EXAMPLES = 40
DEADLINE_MS = 20_000
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    ignored_auth,
]


SEEDED = ("e57fea98-e10e-4cce-a470-5de2e7413154", "gem-resume")


@pytest.fixture(scope="module")
def api_app(tmp_path_factory: pytest.TempPathFactory) -> object:
    data_dir = tmp_path_factory.mktemp("schemathesis-data")
    store = open_store(data_dir)
    store.register(SEEDED[0], "claude-code", str(CLAUDE_COMPACT))
    store.register("gem-resume", "gemini", str(GEMINI_LEGACY))
    store.register("gem-resume", "gemini", str(GEMINI_CONTINUED))
    config = load_config(env={"OPENCODE_RESTORE_DATA_DIR": str(data_dir)})
    # Schemathesis' in-process client names itself "testserver" (its checks send their own
    # requests); the Host guard has its own tests.
    return create_app(store, token=TOKEN, config=config, allowed_hosts=["testserver"])


@pytest.mark.slow
def test_no_server_errors(api_app: object) -> None:
    """Every operation, positive and negative examples: never a 5xx, answers as documented.

    (Schemathesis' own pytest plugin does not run on pytest 9, so the strategies are
    driven through hypothesis directly.)
    """
    schema = schemathesis.openapi.from_asgi("/openapi.json", api_app, headers=AUTH)
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert {op.label for op in operations} >= {
        "GET /healthz",
        "GET /sessions",
        "GET /sessions/{session_id}/messages",
        "POST /sessions/{session_id}/restore",
        "GET /jobs/{job_id}",
    }
    seen: Counter[int] = Counter()
    jobs: list[str] = []
    for op in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=op.as_strategy(generation_mode=mode), data=st.data())
            @settings(
                max_examples=EXAMPLES,
                deadline=DEADLINE_MS,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: schemathesis.Case[Any], data: st.DataObject) -> None:
                # Random ids are all unknown: half the cases ask for a stored session or a
                # job started earlier, so the answers past the 404 are fuzzed too.
                params = case.path_parameters or {}
                if "session_id" in params and data.draw(st.booleans()):
                    params["session_id"] = data.draw(st.sampled_from(SEEDED))
                if "job_id" in params and jobs and data.draw(st.booleans()):
                    params["job_id"] = data.draw(st.sampled_from(jobs))
                response = case.call(headers=AUTH)
                seen[response.status_code] += 1
                if case.method == "POST" and response.status_code in (200, 202):
                    jobs.append(response.json()["id"])
                assert response.status_code < 500, (case.method, case.path, response.text)
                case.validate_response(response, checks=CHECKS, headers=AUTH)

            try:
                check()
            except Unsatisfiable:
                # No parameter to break (GET /healthz): there is no negative example.
                assert mode is GenerationMode.NEGATIVE
                assert not list(op.iter_parameters())
    assert not [code for code in seen if code >= 500]
    assert {200, 202, 401, 404, 422} <= set(seen), seen
