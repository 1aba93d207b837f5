"""The audit log keeps no forgotten content: reasons that quote a record are refused,
and erasing a scope leaves only keyed hashes of its values — in the entries about it,
in the tenant's other reasons and in the dashboard database's bytes — while "was this
scope erased, when, by whom?" stays answerable to someone who knows it."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.models import AuditEntry
from memory_admin.dashboard.redaction import Forgotten, hashed_scope, quoted_fragment, value_token
from memory_admin.scope import scope_json
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient, deployment_env
from tests.support.child import run_python, tail

CANARY = "zqxmeicanary"  # the person's name, as a scope value and in free text
MEI = {"tenant": "t", "user": CANARY}
DANA = {"tenant": "t", "user": "dana"}
CHAT = {"source": "chat"}


# --- what counts as quoting ---------------------------------------------------------------


@pytest.mark.parametrize(
    "reason",
    [
        "Duplicate of 'Mei eats vegetarian …'",
        "duplicate of MEI   EATS, vegetarian!",
        "see: meieatsvegetarianfood",  # 20 characters of it, spacing ignored
        "The record says she is allergic to peanuts and fish",
    ],
)
def test_a_reason_that_quotes_the_record_is_found(reason: str) -> None:
    content = "Mei eats vegetarian food, and she is allergic to peanuts."
    assert quoted_fragment(reason, [content]) is not None


@pytest.mark.parametrize(
    "reason",
    [
        "Duplicate of r123",
        "Wrong: the user corrected it in chat",
        "Mei asked for this",  # two words of it: a name, not a quote
        "",
    ],
)
def test_a_reason_in_ones_own_words_passes(reason: str) -> None:
    content = "Mei eats vegetarian food, and she is allergic to peanuts."
    assert quoted_fragment(reason, [content]) is None


@pytest.fixture
def store(demo_store: InMemoryMemoryStore) -> InMemoryMemoryStore:
    return demo_store


def test_invalidating_with_a_quoting_reason_is_refused(client_for: MakeClient, store: InMemoryMemoryStore) -> None:
    [record] = store.write(
        [{"scope": MEI, "provenance": CHAT, "kind": "preference", "content": "Mei eats vegetarian food every day."}]
    )
    curator = client_for("curator", "tenant=t")
    page = curator.get(reverse("dashboard:invalidate", args=[record.id])).content.decode()
    assert "quotes the record" in page  # the help says so before anyone types
    url = reverse("dashboard:invalidate_run", args=[record.id])
    refused = curator.post(url, {"reason": "Duplicate of 'Mei eats vegetarian …'"})
    assert refused.status_code == 400
    assert "The reason quotes the record" in refused.content.decode()
    assert store.get(record.id).invalid_at is None  # type: ignore[union-attr]
    assert not AuditEntry.objects.exists()
    assert curator.post(url, {"reason": "Duplicate of an older record"}).status_code == 303


def test_deleting_and_erasing_with_a_quoting_reason_is_refused(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    [record] = store.write(
        [{"scope": MEI, "provenance": CHAT, "kind": "fact", "content": "Mei keeps the ledger for the Lisbon office."}]
    )
    officer = client_for("privacy-officer", "tenant=t")
    quoting = "asked us to forget that she keeps the ledger"
    url = reverse("dashboard:delete_run", args=[record.id])
    # a refused confirmation goes back to its form page, which shows why (never resting on …/run/)
    deleted = officer.post(url, {"confirm_id": record.id, "reason": quoting}, follow=True)
    assert deleted.redirect_chain and deleted.redirect_chain[0][1] == 303
    assert deleted.status_code == 400 and "quotes the record" in deleted.content.decode()
    text = "tenant=t,user=" + CANARY
    erased = officer.post(
        reverse("dashboard:erase_run"), {"scope": text, "confirm_scope": text, "reason": quoting}, follow=True
    )
    assert erased.status_code == 400 and "quotes the record" in erased.content.decode()
    assert store.get(record.id) is not None and not AuditEntry.objects.exists()


# --- forgetting removes its content from every reason -------------------------------------

SSN = "Dana's social security number is 078-05-8227, case ERSCAN48227."


@pytest.mark.parametrize(
    ("reason", "kept"),
    [
        ("078-05-8227 is wrong, see ticket 12", "[forgotten] is wrong, see ticket 12"),
        ("SSN 078058227 per Dana", "SSN [forgotten] per [forgotten]"),  # written another way; the name
        ("ends in 8227, ref erscan-48227", "ends in [forgotten], ref [forgotten]"),
        ("Wrong number, see DSHCAN48227", "Wrong [forgotten], see [forgotten]"),  # a code holding 8227
        ("Art. 17 request, keyed hmac:0123abcd, earlier [forgotten]", None),  # nothing of it
        ("It is not hers at all", None),  # the commonest words identify no one
    ],
)
def test_forgetting_removes_every_fragment_of_the_record_from_a_reason(reason: str, kept: str | None) -> None:
    assert Forgotten([SSN]).redact(reason) == (reason if kept is None else kept)


def test_a_deletion_leaves_no_short_identifier_in_any_reason(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    [record] = store.write([{"scope": DANA, "provenance": CHAT, "kind": "fact", "content": SSN}])
    officer = client_for("privacy-officer", "tenant=t")
    accepted = "078-05-8227 is wrong, see DSHCAN48227"  # short: the quoting rule lets it through
    assert officer.post(reverse("dashboard:invalidate_run", args=[record.id]), {"reason": accepted}).status_code == 303
    deleted = officer.post(
        reverse("dashboard:delete_run", args=[record.id]), {"confirm_id": record.id, "reason": "Dana asked; 8227"}
    )
    assert deleted.status_code == 303
    reasons = dict(AuditEntry.objects.values_list("action", "reason"))
    assert reasons == {
        "invalidate": "[forgotten] is wrong, see [forgotten]",
        "delete": "[forgotten] asked; [forgotten]",
    }
    receipt = officer.get(deleted["Location"]).content.decode()
    assert "[forgotten] asked; [forgotten]" in receipt
    said = [str(row) for row in AuditEntry.objects.values_list("reason", "error", "counts")]
    assert not [text for text in said if "8227" in text or "078" in text or "dana" in text.casefold()], said


def test_an_erasure_leaves_no_code_of_its_records_and_shows_the_reason_as_typed_once(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    store.write([{"scope": MEI, "provenance": CHAT, "kind": "fact", "content": SSN}])
    officer = client_for("privacy-officer", "tenant=t")
    text = "tenant=t,user=" + CANARY
    typed = f"ref ERSCAN48227, {CANARY} asked"
    done = officer.post(reverse("dashboard:erase_run"), {"scope": text, "confirm_scope": text, "reason": typed})
    assert done.status_code == 303
    erasure = AuditEntry.objects.get(action="erase")
    assert erasure.reason == f"ref [forgotten], {value_token('user', CANARY)} asked"
    assert "ERSCAN" not in done.cookies["memory_admin_receipt"].value, "the browser keeps it signed, not as text"
    right_after = officer.get(done["Location"]).content.decode()  # as typed, but for the record's own words
    assert f"ref [forgotten], {CANARY} asked" in right_after and erasure.reason in right_after
    again = officer.get(done["Location"]).content.decode()
    assert CANARY not in again and erasure.reason in again
    assert officer.get(reverse("dashboard:audit_entry", args=[erasure.pk])).status_code == 200
    other = client_for("privacy-officer", "tenant=t")  # another browser never sees it
    assert CANARY not in other.get(done["Location"]).content.decode()


def test_a_refused_deletion_keeps_its_reason_in_the_browser_not_the_session_store(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    [record] = store.write([{"scope": DANA, "provenance": CHAT, "kind": "fact", "content": "Dana keeps bees."}])
    officer = client_for("privacy-officer", "tenant=t")
    typed = "zqxtyped reason for a slip"
    refused = officer.post(reverse("dashboard:delete_run", args=[record.id]), {"confirm_id": "mem_X", "reason": typed})
    assert refused.status_code == 303  # the redirect is not followed
    sessions = [session.get_decoded() for session in Session.objects.all()]
    assert sessions and not [s for s in sessions if "zqxtyped" in repr(s)]
    page = officer.get(refused["Location"])  # followed later, from the same browser
    assert page.status_code == 400 and "zqxtyped reason" in page.content.decode()
    assert "That is not the id of this record" in page.content.decode()
    assert page.cookies["memory_admin_retry"]["max-age"] == 0, "shown once"
    assert "zqxtyped" not in officer.get(refused["Location"]).content.decode()
    assert store.get(record.id) is not None and not AuditEntry.objects.exists()


# --- erasure scrubs the audit log ---------------------------------------------------------


def _history(client_for: MakeClient, store: InMemoryMemoryStore) -> tuple[Client, AuditEntry]:
    """Curation about Mei and a reason elsewhere naming her, then her scope erased."""
    [mine, other] = store.write(
        [
            {"scope": MEI, "provenance": CHAT, "kind": "fact", "content": "Works on the night shift."},
            {"scope": MEI, "provenance": CHAT, "kind": "fact", "content": "Prefers window seats."},
        ]
    )
    [danas] = store.write([{"scope": DANA, "provenance": CHAT, "kind": "fact", "content": "Dana reviews the budget."}])
    officer = client_for("privacy-officer", "tenant=t")
    assert (
        officer.post(
            reverse("dashboard:invalidate_run", args=[mine.id]), {"reason": f"{CANARY} said it changed"}
        ).status_code
        == 303
    )
    assert (
        officer.post(
            reverse("dashboard:delete_run", args=[danas.id]),
            {"confirm_id": danas.id, "reason": f"Duplicate of a note {CANARY.upper()} wrote"},
        ).status_code
        == 303
    )
    assert officer.get(reverse("dashboard:export_jsonl") + "?" + urlencode({"scope": "tenant=t,user=" + CANARY}))
    text = "tenant=t,user=" + CANARY
    done = officer.post(
        reverse("dashboard:erase_run"),
        {"scope": text, "confirm_scope": text, "reason": f"Art. 17 request from {CANARY}"},
    )
    assert done.status_code == 303, done.content.decode()
    assert store.get(other.id) is None
    return officer, AuditEntry.objects.get(action="erase")


def test_erasure_leaves_only_keyed_hashes_in_the_audit_log(client_for: MakeClient, store: InMemoryMemoryStore) -> None:
    officer, erasure = _history(client_for, store)
    token = value_token("user", CANARY)
    assert [row for row in AuditEntry.objects.values() if CANARY in repr(row).casefold()] == []
    assert erasure.scope_json == scope_json(hashed_scope(MEI)) and token in erasure.scope_json
    assert erasure.reason == f"Art. 17 request from {token}"
    invalidated = AuditEntry.objects.get(action="invalidate")
    assert invalidated.scope == {"tenant": "t", "user": token}
    assert invalidated.reason == f"{token} said it changed"  # its other words stay as typed
    deleted = AuditEntry.objects.get(action="delete")  # Dana's: its scope stays, Mei's name goes
    assert deleted.scope == DANA and deleted.reason == f"Duplicate of a note {token} wrote"
    url = reverse("dashboard:audit_entry", args=[erasure.pk])
    right_after = officer.get(url)  # the officer's own browser reads the reason as typed, once
    assert f"Art. 17 request from {CANARY}" in right_after.content.decode() and token in right_after.content.decode()
    assert right_after.cookies["memory_admin_receipt"]["max-age"] == 0, "and drops it"
    receipt = officer.get(url).content.decode()
    assert CANARY not in receipt and token in receipt and "Art. 17 request" in receipt
    log = officer.get(reverse("dashboard:audit")).content.decode()
    assert CANARY not in log and log.count(token) >= 3


def test_a_grant_on_the_erased_scope_still_sees_its_entries(client_for: MakeClient, store: InMemoryMemoryStore) -> None:
    _officer, erasure = _history(client_for, store)
    own = client_for("privacy-officer", "tenant=t,user=" + CANARY)
    assert own.get(reverse("dashboard:audit_entry", args=[erasure.pk])).status_code == 200
    other = client_for("privacy-officer", "tenant=t,user=someone")
    assert other.get(reverse("dashboard:audit_entry", args=[erasure.pk])).status_code == 404


def test_who_erased_a_scope_is_answerable_by_someone_who_knows_it(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    _officer, erasure = _history(client_for, store)
    out = StringIO()
    call_command("memory_audit_lookup", "--scope", "tenant=t,user=" + CANARY, stdout=out)
    lines = out.getvalue().splitlines()
    assert any(
        line.startswith(f"#{erasure.pk} ") and "erase by user1 (privacy officer): done, 2 records" in line
        for line in lines
    )
    assert any(" invalidate by user1 " in line for line in lines) and not any(" delete " in line for line in lines)
    out = StringIO()  # a scope inside the erased one was erased with it
    call_command("memory_audit_lookup", "--scope", f"tenant=t,user={CANARY},agent=planner", stdout=out)
    assert f"#{erasure.pk} " in out.getvalue() and " invalidate " not in out.getvalue()
    out = StringIO()
    call_command("memory_audit_lookup", "--scope", "tenant=t,user=zqxsomeoneelse", stdout=out)
    assert "No audit entry is about that scope." in out.getvalue()


def test_a_new_audit_key_changes_every_hash(settings: object) -> None:
    before = value_token("user", CANARY)
    settings.MEMORY_ADMIN_AUDIT_KEY = "a dedicated audit key"  # type: ignore[attr-defined]
    assert value_token("user", CANARY) != before and value_token("user", CANARY).startswith("hmac:")


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_database_keeps_no_bytes_of_an_erased_scope(
    client_for: MakeClient, store: InMemoryMemoryStore
) -> None:
    def database_bytes() -> bytes:
        connection.ensure_connection()
        raw = connection.connection
        assert connection.vendor == "sqlite" and raw is not None
        # the whole database image, free pages included: what the file would hold
        image: bytes = raw.serialize()
        return image

    store.write([{"scope": MEI, "provenance": CHAT, "kind": "fact", "content": "Works on the night shift."}])
    officer = client_for("privacy-officer", "tenant=t")
    officer.get(reverse("dashboard:export_csv") + "?" + urlencode({"scope": "tenant=t,user=" + CANARY}))
    assert CANARY.encode() in database_bytes()  # the test can see it
    text = "tenant=t,user=" + CANARY
    done = officer.post(
        reverse("dashboard:erase_run"), {"scope": text, "confirm_scope": text, "reason": f"asked by {CANARY}"}
    )
    assert done.status_code == 303
    officer.get(done["Location"])
    image = database_bytes()
    assert CANARY.encode() not in image and CANARY.upper().encode() not in image


# --- the dashboard database file, as a deployment keeps it ---------------------------------

SCRIPT = """
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from memory_admin.dashboard.stores import get_store
from tests.dashboard.conftest import make_user

CANARY, SCOPE = {canary!r}, {scope!r}
call_command("migrate", verbosity=0)
store = get_store()
[record] = store.write(
    [{{"scope": {{"tenant": "t", "user": CANARY}}, "kind": "fact", "content": "Works nights.",
       "provenance": {{"source": "chat"}}}}]
)
client = Client()
client.force_login(make_user("pat", "privacy-officer", ("tenant=t",)))
assert client.post(f"/records/{{record.id}}/invalidate/run/", {{"reason": f"{{CANARY}} asked"}}).status_code == 303
b"".join(client.get("/export.jsonl?scope=" + SCOPE.replace("=", "%3D").replace(",", "%2C")).streaming_content)
if {erase}:
    form = {{"scope": SCOPE, "confirm_scope": SCOPE, "reason": f"asked by {{CANARY}}"}}
    done = client.post("/scopes/erase/run/", form)
    assert done.status_code == 303, done.content
    assert client.get(done["Location"]).status_code == 200
"""


def _dashboard_file_after(tmp_path: Path, *, erase: bool) -> bytes:
    """Run the dashboard in a process of its own, on a dashboard database file, and return
    that file's bytes (and any journal beside it) afterwards."""
    tmp_path.mkdir()
    env = deployment_env(tmp_path)
    script = SCRIPT.format(canary=CANARY, scope="tenant=t,user=" + CANARY, erase=erase)
    done = run_python(script, env=env)
    assert done.returncode == 0, tail(done)
    path = tmp_path / "dashboard.sqlite3"
    return b"".join(p.read_bytes() for p in (path, *path.parent.glob("dashboard.sqlite3-*")) if p.exists())


def test_the_dashboard_database_file_keeps_no_canary_after_erasure(tmp_path: Path) -> None:
    before = _dashboard_file_after(tmp_path / "kept", erase=False)
    assert CANARY.encode() in before  # the test can see it: the reason and the scopes hold it
    after = _dashboard_file_after(tmp_path / "erased", erase=True)
    assert CANARY.encode() not in after and CANARY.upper().encode() not in after


def test_erasing_a_whole_tenant_hashes_every_value_under_it(client_for: MakeClient, store: InMemoryMemoryStore) -> None:
    agent = {"tenant": "t2", "user": CANARY, "agent": "planner"}
    [record] = store.write([{"scope": agent, "provenance": CHAT, "kind": "fact", "content": "Books trains."}])
    officer = client_for("privacy-officer", "tenant=t2")
    reason = {"reason": "Wrong, see ticket 5"}
    assert officer.post(reverse("dashboard:invalidate_run", args=[record.id]), reason).status_code == 303
    done = officer.post(
        reverse("dashboard:erase_run"), {"scope": "tenant=t2", "confirm_scope": "tenant=t2", "reason": "Customer left"}
    )
    assert done.status_code == 303
    invalidated = AuditEntry.objects.get(action="invalidate")
    assert invalidated.scope == {
        "tenant": "t2",
        "user": value_token("user", CANARY),
        "agent": value_token("agent", "planner"),
    }
    assert invalidated.reason == "Wrong, see ticket 5"  # nothing of what was erased in it
    erasure = AuditEntry.objects.get(action="erase")
    assert erasure.scope == {"tenant": "t2"} and erasure.reason == "Customer left"
    assert all("hmac:" in text for text in erasure.counts["scope_list"])
    assert [row for row in AuditEntry.objects.values() if CANARY in repr(row)] == []
    # who erased the person's scope is still answerable, through the tenant's erasure too
    out = StringIO()
    call_command("memory_audit_lookup", "--scope", f"tenant=t2,user={CANARY}", stdout=out)
    assert " invalidate by " in out.getvalue() and f"#{erasure.pk} " in out.getvalue()
