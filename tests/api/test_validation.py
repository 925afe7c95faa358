"""Every API field is bounded: a value out of range is a 422 that says why, never a 5xx.

The campaign's finding (issue 31): ``POST /sessions/{id}/restore`` with a huge
``max_turns`` answered 500 (``{"max_turns": 1e400}`` is infinity, which FastAPI's own 422
could not encode), and ``since=9999999999999d`` overflowed the date arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from opencode_restore.api import create_app
from opencode_restore.api.app import ECHO_CHARS
from opencode_restore.api.deps import MAX_ID_CHARS
from opencode_restore.api.schemas import MAX_TURNS
from opencode_restore.config import load_config
from opencode_restore.store.store import Store
from tests.store.builders import CLAUDE_COMPACT

SID = "e57fea98-e10e-4cce-a470-5de2e7413154"
TOKEN = "v" * 32
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    store.register(SID, "claude-code", str(CLAUDE_COMPACT))
    app = create_app(store, token=TOKEN, config=load_config(), reads_need_token=False)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1", headers=auth) as c:
        yield c


def _runs(store: Store) -> int:
    count: int = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    return count


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (f'{{"max_turns": {MAX_TURNS + 1}}}', "less than or equal"),
        ('{"max_turns": 99999999999999999999999999}', "less than or equal"),
        ('{"max_turns": 9223372036854775808}', "less than or equal"),
        ('{"max_turns": 1e400}', "finite"),
        ('{"max_turns": -1e400}', "finite"),
        ('{"max_turns": NaN}', "finite"),
        ('{"max_turns": 0}', "greater than or equal"),
        ('{"max_turns": 2.5}', "integer"),
        ('{"max_turns": "many"}', "integer"),
        ('{"max_turns": true}', "boolean"),
        ('{"max_turns": [1]}', "integer"),
        ('{"max_turns": 1, "workspace": "/"}', "Extra inputs"),
    ],
)
def test_restore_options_out_of_range_are_422(
    client: TestClient, store: Store, body: str, says: str
) -> None:
    r = client.post(f"/sessions/{SID}/restore", content=body, headers=JSON)
    assert r.status_code == 422, r.text
    assert says in r.text
    assert _runs(store) == 0  # nothing started


def test_the_largest_max_turns_is_accepted_by_validation(client: TestClient) -> None:
    # Unknown session: validation passed, the lookup answered.
    r = client.post("/sessions/unknown/restore", json={"max_turns": MAX_TURNS})
    assert r.status_code == 404


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/sessions?limit=0", "limit"),
        ("/sessions?limit=1001", "limit"),
        ("/sessions?limit=99999999999999999999999", "limit"),
        ("/sessions?offset=-1", "offset"),
        ("/sessions?offset=" + "9" * 5000, "offset"),
        ("/sessions?agent=" + "a" * 65, "agent"),
        ("/sessions?since=" + "9" * 65, "since"),
        ("/sessions?since=9999999999999d", "since"),
        ("/sessions?until=99999999999999w", "until"),
        ("/sessions?since=1e400", "since"),
        (f"/sessions/{SID}/messages?since=9999999999999d", "since"),
        (f"/sessions/{SID}/messages?since=" + "x" * 5000, "since"),
        (f"/sessions/{SID}/messages?include_tools=maybe", "include_tools"),
        (f"/sessions/{SID}/messages?raw=2", "raw"),
        ("/sessions/" + "x" * (MAX_ID_CHARS + 1), "session_id"),
        ("/sessions/" + "x" * (MAX_ID_CHARS + 1) + "/messages", "session_id"),
        ("/sessions/" + "x" * (MAX_ID_CHARS + 1) + "/summary", "session_id"),
        ("/jobs/" + "x" * (MAX_ID_CHARS + 1), "job_id"),
    ],
)
def test_query_and_path_fields_out_of_range_are_422(
    client: TestClient, path: str, field: str
) -> None:
    r = client.get(path)
    assert r.status_code == 422, r.text
    errors = r.json()["detail"]
    assert any(e["loc"][-1] == field for e in errors), errors
    assert all(e["msg"] for e in errors)
    # The refused value is quoted clipped, not kilobytes of it.
    assert len(r.text) < ECHO_CHARS + 600


def test_a_long_session_id_in_a_post_is_422(client: TestClient, store: Store) -> None:
    r = client.post("/sessions/" + "x" * (MAX_ID_CHARS + 1) + "/restore", json={})
    assert r.status_code == 422
    assert _runs(store) == 0
