"""Forgetting, end to end, as a deployment runs it, on every backend: a canary is written,
searched for, recalled, exported and invalidated — through the store with a reason that
quotes it, and through the dashboard with a reason holding short identifiers of it that
the quoting rule lets through (a number, a code); then it is deleted (or its scope erased)
through the dashboard, with a reason naming the code again. Afterwards no audit entry holds
a fragment of it (the reasons keep their other words, the erased scope its keyed hash), the
store holds nothing of it, and no file of the dashboard's database holds a byte of it.

On SQLite an agent's connection holds a read transaction meanwhile: the receipt says the
scrub is pending, and once the reader lets go ``memory_scrub`` finishes it — no file of the
memory store holds a byte either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dashboard.conftest import deployment_env
from tests.support.child import report
from tests.support.child import run_python as run_child
from tests.support.stores import backends

CANARY = "wuxcanary6603"
NUMBER = "419-27-5183"  # short identifiers of the record: the quoting rule lets them through
CODE = "ERSCAN48227"
FRAGMENTS = (CANARY, NUMBER, NUMBER.replace("-", ""), CODE)

SCRIPT = """
import json
import sqlite3
from pathlib import Path
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.stores import get_store
from memory_admin.recall import assemble_recall
from tests.dashboard.conftest import make_user

CANARY, NUMBER, CODE, HOW, BACKEND, URL = {canary!r}, {number!r}, {code!r}, {how!r}, {backend!r}, {url!r}
MEMORY = URL.removeprefix("sqlite:///")


def on_disk(name):
    path = Path(MEMORY).with_name(name)
    return b"".join(p.read_bytes() for p in (path, *path.parent.glob(name + "-*")) if p.exists())


SCOPE = {{"tenant": "t", "user": CANARY if HOW == "erase" else "dana"}}
TEXT = "tenant=t,user=" + SCOPE["user"]
call_command("migrate", verbosity=0)
store = get_store()
store.write([{{"scope": SCOPE, "kind": "fact", "content": "Dana keeps bees.", "provenance": {{"source": "chat"}}}}])
content = f"The door code is {{CANARY}}; Dana's number is {{NUMBER}}, her case {{CODE}}."
[record, other] = store.write(
    [
        {{"scope": SCOPE, "kind": "fact", "content": content, "provenance": {{"source": "chat"}}}},
        {{"scope": SCOPE, "kind": "fact", "content": f"{{CANARY}} is open.", "provenance": {{"source": "chat"}}}},
    ]
)
assert store.search({{"scope": {{"tenant": "t"}}, "query": f"what is {{CANARY}}?"}})
assert assemble_recall(store, SCOPE, f"Open the door with {{CANARY}}").report.count >= 1
store.invalidate(other.id, f"{{CANARY}} was closed")  # a reason that quotes it, through the store
client = Client()
client.force_login(make_user("pat", "privacy-officer", ("tenant=t",)))
wrong = f"{{NUMBER}} is wrong, see file {{CODE}}"
invalidated = client.post(f"/records/{{record.id}}/invalidate/run/", {{"reason": wrong}})
assert invalidated.status_code == 303, invalidated.content
export = client.get("/export.jsonl", {{"scope": TEXT, "invalidated": "1"}})
assert CANARY.encode() in b"".join(export.streaming_content)
store.flush_events()

reader = None
if BACKEND == "sqlite":  # an agent mid-read, holding its snapshot
    reader = sqlite3.connect(MEMORY)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memory_records").fetchone()
reason = f"asked to, file {{CODE}}"
if HOW == "delete":
    done = client.post(f"/records/{{record.id}}/delete/run/", {{"confirm_id": record.id, "reason": reason}})
    client.post(f"/records/{{other.id}}/delete/run/", {{"confirm_id": other.id, "reason": "the same request"}})
else:
    done = client.post("/scopes/erase/run/", {{"scope": TEXT, "confirm_scope": TEXT, "reason": reason}})
assert done.status_code == 303, done.content
receipt = client.get(done["Location"]).content.decode()
assert store.get(record.id) is None and store.get(other.id) is None
if reader is not None:
    assert "Scrub pending." in receipt, receipt
    assert CANARY.encode() in on_disk("memory.sqlite3"), "the reader's snapshot still needs those pages"
    reader.rollback()
    reader.close()
    call_command("memory_scrub", "--wait", "10")
    for name in ("memory.sqlite3", "dashboard.sqlite3"):  # every connection still open
        assert CANARY.encode() not in on_disk(name) and CANARY.upper().encode() not in on_disk(name), name
live = []  # what the store still answers with, on any backend
live += [hit.record.content for hit in store.search({{"scope": {{"tenant": "t"}}, "include_invalidated": True}})]
live += [e.model_dump_json() for e in store.query_events({{"scope": {{"tenant": "t"}}, "include_previews": True}})]
if BACKEND == "postgres":  # the rows themselves (their bytes stay in the files until VACUUM FULL)
    import psycopg
    with psycopg.connect(URL) as conn:
        for table in ("memory_records", "memory_scopes", "memory_events"):
            live += [str(row) for row in conn.execute(f"SELECT * FROM {{table}}").fetchall()]
entries = {{e.action: e.reason for e in AuditEntry.objects.order_by("-id") if e.record_ids in ([], [record.id])}}
print(json.dumps({{"receipt": receipt, "live": live, "entries": entries}}))
"""


def _files(folder: Path, name: str) -> bytes:
    path = folder / name
    return b"".join(p.read_bytes() for p in (path, *folder.glob(f"{name}-*")) if p.exists())


@pytest.mark.slow
@pytest.mark.parametrize("how", ["delete", "erase"])
@pytest.mark.parametrize("backend", backends("memory", "sqlite", "postgres"))
def test_a_forgotten_canary_leaves_no_fragment_anywhere(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, how: str
) -> None:
    url = {"memory": "memory://", "sqlite": f"sqlite:///{tmp_path / 'memory.sqlite3'}"}.get(backend)
    url = url or request.getfixturevalue("postgres_url")
    env = deployment_env(tmp_path, url)
    script = SCRIPT.format(canary=CANARY, number=NUMBER, code=CODE, how=how, backend=backend, url=url)
    found = report(run_child(script, env=env))
    # the reasons keep their own words; every fragment of the forgotten record is gone
    assert found["entries"]["invalidate"] == "[forgotten] is wrong, see file [forgotten]"
    assert found["entries"][how] == "asked to, file [forgotten]"
    text = json.dumps(found)
    assert not [fragment for fragment in FRAGMENTS if fragment.casefold() in text.casefold()], text
    dashboard = _files(tmp_path, "dashboard.sqlite3")
    assert dashboard, "the dashboard's database was written"
    for fragment in FRAGMENTS:
        assert fragment.encode() not in dashboard and fragment.upper().encode() not in dashboard, fragment
    if backend == "sqlite":
        memory = _files(tmp_path, "memory.sqlite3")
        assert memory and CANARY.encode() not in memory and CANARY.upper().encode() not in memory
