"""Forgetting, end to end, as a deployment runs it: a canary is written, searched for,
recalled, exported and invalidated with a reason that quotes it; then it is deleted (or
its scope erased) through the dashboard while an agent's connection holds a read
transaction. The receipt says the scrub is pending; once the reader lets go,
``memory_scrub`` finishes it, and no file of the memory store or of the dashboard's
database holds a byte of the canary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.conftest import deployment_env
from tests.support.child import run_python, tail

CANARY = "wuxcanary6603"

SCRIPT = """
import sqlite3
from pathlib import Path
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from memory_admin.dashboard.stores import get_store
from memory_admin.recall import assemble_recall
from tests.dashboard.conftest import make_user

CANARY, HOW, MEMORY = {canary!r}, {how!r}, {memory!r}


def on_disk(name):
    path = Path(MEMORY).with_name(name)
    return b"".join(p.read_bytes() for p in (path, *path.parent.glob(name + "-*")) if p.exists())


SCOPE = {{"tenant": "t", "user": CANARY if HOW == "erase" else "dana"}}
TEXT = "tenant=t,user=" + SCOPE["user"]
call_command("migrate", verbosity=0)
store = get_store()
store.write([{{"scope": SCOPE, "kind": "fact", "content": "Dana keeps bees.", "provenance": {{"source": "chat"}}}}])
[record] = store.write(
    [{{"scope": SCOPE, "kind": "fact", "content": f"The door code is {{CANARY}}.", "provenance": {{"source": "chat"}}}}]
)
assert store.search({{"scope": {{"tenant": "t"}}, "query": f"what is {{CANARY}}?"}})
assert assemble_recall(store, SCOPE, f"Open the door with {{CANARY}}").report.count >= 1
store.invalidate(record.id, f"{{CANARY}} was rotated")  # a reason that quotes it, through the store
client = Client()
client.force_login(make_user("pat", "privacy-officer", ("tenant=t",)))
export = client.get("/export.jsonl", {{"scope": TEXT, "invalidated": "1"}})
assert CANARY.encode() in b"".join(export.streaming_content)
store.flush_events()

reader = sqlite3.connect(MEMORY)  # an agent mid-read, holding its snapshot
reader.execute("BEGIN")
reader.execute("SELECT count(*) FROM memory_records").fetchone()
if HOW == "delete":
    done = client.post(f"/records/{{record.id}}/delete/run/", {{"confirm_id": record.id, "reason": "asked to"}})
else:
    done = client.post("/scopes/erase/run/", {{"scope": TEXT, "confirm_scope": TEXT, "reason": "asked to"}})
assert done.status_code == 303, done.content
receipt = client.get(done["Location"]).content.decode()
assert "Scrub pending." in receipt, receipt
assert store.get(record.id) is None
assert CANARY.encode() in on_disk("memory.sqlite3"), "the reader's snapshot still needs those pages"
reader.rollback()
reader.close()
call_command("memory_scrub", "--wait", "10")
for name in ("memory.sqlite3", "dashboard.sqlite3"):  # every connection still open
    assert CANARY.encode() not in on_disk(name) and CANARY.upper().encode() not in on_disk(name), name
"""


def _files(folder: Path, name: str) -> bytes:
    path = folder / name
    return b"".join(p.read_bytes() for p in (path, *folder.glob(f"{name}-*")) if p.exists())


@pytest.mark.slow
@pytest.mark.parametrize("how", ["delete", "erase"])
def test_a_forgotten_canary_leaves_no_byte_in_any_file(tmp_path: Path, how: str) -> None:
    memory = tmp_path / "memory.sqlite3"
    env = deployment_env(tmp_path)
    script = SCRIPT.format(canary=CANARY, how=how, memory=str(memory))
    done = run_python(script, env=env)
    assert done.returncode == 0, tail(done)
    for name in ("memory.sqlite3", "dashboard.sqlite3"):
        found = _files(tmp_path, name)
        assert found, f"{name} was written"
        assert CANARY.encode() not in found and CANARY.upper().encode() not in found, f"the canary is in {name}"
