"""The learnings pages over the demo corpus, as a curator of tenant acme: the inbox (page
and fragment, filters, counts, pages, bad parameters), one learning, each decision —
approve, reject, edit then approve, keep one side of a conflict, roll back, bulk — with
its audit entry and the composed prompt changing, a stale decision refused with what
moved (nothing applied), proposals, compositions now, then and compared, and what was
learned with its exports."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.demo import ACME_SUPPORT, DEMO_COMPOSITION
from memory_admin.dashboard.models import AuditEntry
from memory_admin.learning import compose
from memory_admin.learning.review import approve
from memory_admin.promotion import Promotion
from memory_admin.records import utc_now
from memory_admin.store import InMemoryMemoryStore

pytestmark = pytest.mark.django_db

SUPPORT = "tenant=acme,agent=support"
PENDING = "Refund requests must quote the booking reference"
CONFLICT = "Refund more than the fare paid"
PICKABLE = "cannot change a booking"
PROMOTED = "Offer a travel voucher"


def q(**params: str) -> str:
    return "?" + urlencode(params)


def learning_of(store: InMemoryMemoryStore, text: str) -> Promotion:
    found = store.promotions({"tenant": "acme"}, limit=100).promotions
    [promotion] = [p for p in found if p.record is not None and text in p.record.content]
    return promotion


def page_form(html: str) -> dict[str, str]:
    """The hidden fields of a learning page's decision form (its pin and when it was shown)."""
    form = html[html.index('id="decide"') :]
    return {
        name: value.replace("&quot;", '"')
        for name, value in re.findall(r'name="(pin|seen_at|other|other_pin)" value="([^"]*)"', form)
    }


def prompt_text(store: InMemoryMemoryStore) -> str:
    return compose(store, ACME_SUPPORT, register=False, emit=False).prompt.text


def catch_up(store: InMemoryMemoryStore) -> None:
    """The demo's clock stops where its history ends; what a test decides after a page was
    shown is dated now, as a deployed store would date it."""
    store._clock.now = utc_now()  # type: ignore[attr-defined]


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


# --- the inbox ---------------------------------------------------------------------------------


def test_the_inbox_page_and_its_fragment(curator: Client) -> None:
    url = reverse("dashboard:learnings") + q(scope="tenant=acme")
    page = curator.get(url)
    fragment = curator.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200 and "HX-Request" in fragment["Vary"]
    assert "<html" in page.content.decode() and fragment.content.decode().lstrip().startswith('<div id="inbox"')
    html = page.content.decode()
    assert PENDING in html and CONFLICT in html and "globex" not in html
    assert re.search(r"Pending review <span class=\"count\">1</span>", html)
    assert re.search(r"Conflict <span class=\"count\">2</span>", html)
    assert "Gardening proposals" in html and "a current-state fact stated" in html


def test_the_inbox_filters_by_state_target_and_tier(curator: Client) -> None:
    base = reverse("dashboard:learnings")
    waiting = curator.get(base + q(scope="tenant=acme", state="pending_review")).content.decode()
    assert PENDING in waiting and CONFLICT not in waiting
    assert 'All <span class="count">13</span>' in waiting, "the counts are the whole listing's"
    awareness = curator.get(base + q(scope="tenant=acme", primitive="awareness")).content.decode()
    assert PICKABLE in awareness and PENDING not in awareness
    guarded = curator.get(base + q(scope="tenant=acme", tier="guarded")).content.decode()
    assert PENDING in guarded and PROMOTED not in guarded
    agent = curator.get(base + q(scope="tenant=acme", agent="planner")).content.decode()
    assert "For Dana" in agent and PENDING not in agent


def test_the_inbox_pages_by_keyset(curator: Client, settings: Any) -> None:
    settings.DASHBOARD_PAGE_SIZE = 5
    first = curator.get(reverse("dashboard:learnings") + q(scope="tenant=acme")).content.decode()
    cursor = re.search(r'href="\?scope=tenant%3Dacme&amp;after=([^"]+)" hx-get=[^>]*rel="next"', first)
    assert cursor is not None
    second = curator.get(
        reverse("dashboard:learnings") + q(scope="tenant=acme", after=cursor.group(1))
    ).content.decode()
    ids = lambda html: set(re.findall(r'href="/learnings/(mem_[^/]+)/"', html))  # noqa: E731
    assert len(ids(first)) == 5 and ids(first).isdisjoint(ids(second)) and ids(second)


@pytest.mark.parametrize("params", [{"state": "maybe"}, {"bogus": "1"}, {"scope": "user=dana"}, {"after": "x" * 300}])
def test_bad_inbox_parameters_are_400_in_the_page(curator: Client, params: dict[str, str]) -> None:
    response = curator.get(reverse("dashboard:learnings") + q(**params))
    assert response.status_code == 400 and 'class="alert"' in response.content.decode()


def test_an_empty_inbox_says_what_to_do(client_for: Any, demo_store: InMemoryMemoryStore) -> None:
    html = client_for("curator", "tenant=umbrella").get(reverse("dashboard:learnings")).content.decode()
    assert "No learnings" in html and "target" in html


def test_an_admin_picks_a_tenant_first(client_for: Any, demo_store: InMemoryMemoryStore) -> None:
    html = client_for("admin").get(reverse("dashboard:learnings")).content.decode()
    assert "Pick a scope to start" in html and "tenant=globex" in html


# --- one learning and its decisions --------------------------------------------------------------


def test_a_learning_page_and_its_fragment(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    pending = learning_of(demo_store, PENDING)
    url = reverse("dashboard:learning", args=[pending.record_id])
    page, fragment = curator.get(url), curator.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200
    assert fragment.content.decode().lstrip().startswith('<article class="learning" id="learning"')
    html = page.content.decode()
    assert "judgment.refunds.constraints" in html and "waiting: approval" in html
    assert 'value="approve"' in html and 'value="reject"' in html and "Edit, then approve" in html
    assert "Judgment: 225 → <strong>303</strong> of 3000" in html, "its size against the budget"
    assert page_form(html)["pin"].startswith("{")


@pytest.mark.parametrize(("which", "conflict"), [("pending", False), ("pickable", True)])
def test_a_learning_page_jumps_to_each_of_its_parts(
    curator: Client, demo_store: InMemoryMemoryStore, which: str, conflict: bool
) -> None:
    learning = learning_of(demo_store, PENDING if which == "pending" else PICKABLE)
    html = curator.get(reverse("dashboard:learning", args=[learning.record_id])).content.decode()
    jump = re.search(r'<p class="small jump">(.*?)</p>', html, re.S)
    assert jump is not None
    targets = re.findall(r'href="#([\w-]+)"', jump.group(1))
    assert ("conflict" in targets) is conflict and "decide" in targets
    for target in targets:
        assert f'id="{target}"' in html, target  # every jump lands somewhere


def test_approving_puts_it_in_the_prompt_with_an_audit_entry(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    pending = learning_of(demo_store, PENDING)
    url = reverse("dashboard:learning", args=[pending.record_id])
    fields = page_form(curator.get(url).content.decode())
    assert PENDING not in prompt_text(demo_store)
    done = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]),
        {**fields, "decision": "approve", "reason": "matches the finance policy"},
    )
    assert done.status_code == 303 and done["Location"] == url
    assert learning_of(demo_store, PENDING).state == "promoted"
    assert PENDING in prompt_text(demo_store)
    [entry] = entries("approve")
    assert entry.record_ids == [pending.record_id] and entry.outcome == "done" and entry.reason.startswith("matches")
    assert entry.counts["state"] == "promoted" and entry.scope_text == SUPPORT
    after = curator.get(url).content.decode()
    assert "Approved: it is part of the composition now" in after and "audit entry #" in after


def test_rejecting_needs_a_reason_and_keeps_what_was_typed(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    pending = learning_of(demo_store, PENDING)
    url = reverse("dashboard:learning", args=[pending.record_id])
    fields = page_form(curator.get(url).content.decode())
    refused = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]), {**fields, "decision": "reject"}
    )
    assert refused.status_code == 303 and refused["Location"] == url
    again = curator.get(url)
    assert again.status_code == 400 and "Give a reason" in again.content.decode()
    assert learning_of(demo_store, PENDING).state == "pending_review" and not entries("reject")
    assert curator.get(url).status_code == 200, "the refusal shows once"
    quoting = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]),
        {**fields, "decision": "reject", "reason": "refund requests must quote the booking reference"},
    )
    assert quoting.status_code == 303 and "quotes the record" in curator.get(url).content.decode()
    done = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]),
        {**fields, "decision": "reject", "reason": "the format is checked by the booking tool already"},
    )
    assert done.status_code == 303 and learning_of(demo_store, PENDING).state == "rejected"
    assert [e.outcome for e in entries("reject")] == ["done"]


def test_a_stale_decision_is_refused_with_what_moved(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    pending = learning_of(demo_store, PENDING)
    held = learning_of(demo_store, "Check the booking tool before asking")
    url = reverse("dashboard:learning", args=[pending.record_id])
    fields = page_form(curator.get(url).content.decode())
    catch_up(demo_store)
    approve(demo_store, held.record_id, DEMO_COMPOSITION, actor="mei")  # the composition moves meanwhile
    before = prompt_text(demo_store)
    refused = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]), {**fields, "decision": "approve"}
    )
    assert refused.status_code == 303
    shown = curator.get(url)
    html = shown.content.decode()
    assert shown.status_code == 409 and "moved since you looked" in html
    assert "The composition's prompt changed since you looked" in html
    assert "Check the booking tool before asking" in html[html.index('id="moved"') :], "the difference is shown"
    assert learning_of(demo_store, PENDING).state == "pending_review" and prompt_text(demo_store) == before
    [entry] = entries("approve")
    assert entry.outcome == "failed" and "changed since" in entry.error


def test_a_stale_decision_with_htmx_swaps_the_learning_with_what_moved(
    curator: Client, demo_store: InMemoryMemoryStore
) -> None:
    pending = learning_of(demo_store, PENDING)
    fields = page_form(curator.get(reverse("dashboard:learning", args=[pending.record_id])).content.decode())
    demo_store.reject(pending.record_id, actor="mei", reason="duplicate of the handbook")
    refused = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]),
        {**fields, "decision": "approve"},
        HTTP_HX_REQUEST="true",
    )
    html = refused.content.decode()
    assert refused.status_code == 409 and html.lstrip().startswith('<article class="learning"')
    assert "You saw it <strong>pending review</strong>" in html and "by mei" in html
    assert learning_of(demo_store, PENDING).state == "rejected"


def test_approving_with_htmx_swaps_the_learning_in_place(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    pending = learning_of(demo_store, PENDING)
    fields = page_form(curator.get(reverse("dashboard:learning", args=[pending.record_id])).content.decode())
    done = curator.post(
        reverse("dashboard:learning_decide", args=[pending.record_id]),
        {**fields, "decision": "approve"},
        HTTP_HX_REQUEST="true",
    )
    assert done.status_code == 200 and "Approved" in done.content.decode()
    assert done["HX-Push-Url"] == reverse("dashboard:learning", args=[pending.record_id])


def test_edit_then_approve_writes_a_superseding_version(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    conflict = learning_of(demo_store, CONFLICT)
    edit_url = reverse("dashboard:learning_edit", args=[conflict.record_id])
    html = curator.get(edit_url).content.decode()
    assert "Write the edit and approve it" in html and CONFLICT in html
    pin = re.search(r'name="pin" value="([^"]+)"', html)
    assert pin is not None
    text = "Offer the delay compensation on top of the fare refund when the delay passed six hours."
    done = curator.post(
        reverse("dashboard:learning_edit_run", args=[conflict.record_id]),
        {
            "content": text,
            "reason": "the policy pays compensation, not more refund",
            "pin": pin.group(1).replace("&quot;", '"'),
        },
    )
    assert done.status_code == 303
    edited = learning_of(demo_store, "Offer the delay compensation")
    assert edited.state == "promoted" and edited.record is not None
    assert edited.record.supersedes == conflict.record_id and edited.record.provenance.author is not None
    assert text in prompt_text(demo_store) and CONFLICT not in prompt_text(demo_store)
    [entry] = entries("edit_approve")
    assert entry.record_ids == [conflict.record_id, edited.record_id]
    unchanged = curator.post(
        reverse("dashboard:learning_edit_run", args=[edited.record_id]),
        {"content": text, "pin": json.dumps({"revision": edited.revision})},
    )
    assert unchanged.status_code == 303 and "change it, or approve it as is" not in unchanged.content.decode()


def test_keeping_one_side_of_a_conflict(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    newer = learning_of(demo_store, PICKABLE)
    url = reverse("dashboard:learning", args=[newer.record_id])
    html = curator.get(url).content.decode()
    assert "Keep this learning" in html and "Keep the other" in html
    older_id = page_form(html)["other"]
    done = curator.post(
        reverse("dashboard:learning_decide", args=[newer.record_id]),
        {**page_form(html), "decision": "keep_this", "reason": "changes go through the agent desk now"},
    )
    assert done.status_code == 303
    assert learning_of(demo_store, PICKABLE).state == "promoted"
    older = demo_store.promotion(older_id)
    assert older is not None and older.state == "demoted" and older.last.cause == "rollback"
    assert "Itinerary lookups only" in prompt_text(demo_store), "its payload is the awareness entry"
    [entry] = entries("pick")
    assert entry.record_ids == [newer.record_id, older_id] and entry.counts["survivor"] == newer.record_id


def test_rolling_back_from_the_composition_changes_its_prompt(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    promoted = learning_of(demo_store, PROMOTED)
    composition = reverse("dashboard:composition") + q(scope=SUPPORT)
    html = curator.get(composition).content.decode()
    link = reverse("dashboard:learning_rollback", args=[promoted.record_id])
    assert link in html and "Roll back…" in html
    page = curator.get(link + q(next=composition)).content.decode()
    pin = re.search(r'name="pin" value="([^"]+)"', page)
    assert pin is not None and "Roll it back" in page
    data = {"decision": "rollback", "pin": pin.group(1).replace("&quot;", '"'), "next": composition}
    refused = curator.post(reverse("dashboard:learning_decide", args=[promoted.record_id]), data)
    assert refused.status_code == 303 and refused["Location"] == link
    assert curator.get(link).status_code == 400
    done = curator.post(
        reverse("dashboard:learning_decide", args=[promoted.record_id]),
        {**data, "reason": "travellers complained about vouchers"},
    )
    assert done.status_code == 303 and done["Location"] == composition
    assert PROMOTED not in prompt_text(demo_store)
    after = curator.get(composition).content.decode()
    assert PROMOTED not in after[after.index('id="prompt"') :]
    record = demo_store.get(promoted.record_id)
    assert record is not None and record.is_valid, "nothing deleted"
    [entry] = entries("rollback")
    assert entry.reason == "travellers complained about vouchers"


def test_a_foreign_next_is_not_followed(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    promoted = learning_of(demo_store, PROMOTED)
    page = curator.get(
        reverse("dashboard:learning_rollback", args=[promoted.record_id]) + q(next="https://evil.example/")
    ).content.decode()
    assert "evil.example" not in page
    pin = re.search(r'name="pin" value="([^"]+)"', page)
    assert pin is not None
    done = curator.post(
        reverse("dashboard:learning_decide", args=[promoted.record_id]),
        {"decision": "rollback", "reason": "no", "pin": pin.group(1).replace("&quot;", '"'), "next": "//evil.example/"},
    )
    assert done.status_code == 303 and done["Location"] == reverse("dashboard:learning", args=[promoted.record_id])


# --- bulk decisions --------------------------------------------------------------------------------


def inbox_fields(html: str) -> dict[str, Any]:
    return {
        "seen_at": re.search(r'name="seen_at" value="([^"]+)"', html).group(1),  # type: ignore[union-attr]
        "next": re.search(r'name="next" value="([^"]+)"', html).group(1).replace("&amp;", "&"),  # type: ignore[union-attr]
        **{
            f"pin-{rid}": pin.replace("&quot;", '"')
            for rid, pin in re.findall(r'name="pin-([^"]+)" value="([^"]+)"', html)
        },
    }


def test_bulk_reject_of_a_filtered_page(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    url = reverse("dashboard:learnings") + q(scope="tenant=acme", state="held")
    html = curator.get(url).content.decode()
    held = [p.record_id for p in demo_store.promotions({"tenant": "acme"}, states=["held"]).promotions]
    assert len(held) == 2
    fields = inbox_fields(html)
    refused = curator.post(reverse("dashboard:learnings_decide"), {**fields, "record": held, "decision": "reject"})
    assert refused.status_code == 303 and refused["Location"] == url
    shown = curator.get(url)
    assert shown.status_code == 200 and "Give a reason" in shown.content.decode()
    done = curator.post(
        reverse("dashboard:learnings_decide"),
        {**fields, "record": held, "decision": "reject", "reason": "not general enough"},
    )
    assert done.status_code == 303 and done["Location"] == url
    assert {demo_store.promotion(i).state for i in held} == {"rejected"}  # type: ignore[union-attr]
    assert sorted(e.record_ids[0] for e in entries("reject")) == sorted(held)
    assert "Rejected 2 learnings" in curator.get(url).content.decode()


def test_bulk_approval_is_all_or_nothing_and_shows_what_moved(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    url = reverse("dashboard:learnings") + q(scope="tenant=acme", tier="guarded")
    html = curator.get(url).content.decode()
    pending, conflict = learning_of(demo_store, PENDING), learning_of(demo_store, CONFLICT)
    fields = inbox_fields(html)
    demo_store.reject(conflict.record_id, actor="mei", reason="contradicts the policy")
    refused = curator.post(
        reverse("dashboard:learnings_decide"),
        {**fields, "record": [pending.record_id, conflict.record_id], "decision": "approve"},
    )
    assert refused.status_code == 303
    shown = curator.get(url)
    html = shown.content.decode()
    assert "Nothing was decided" in html and "by mei" in html
    assert learning_of(demo_store, PENDING).state == "pending_review"
    assert [e.outcome for e in entries("approve")] == ["failed", "failed"]
    with_htmx = curator.post(
        reverse("dashboard:learnings_decide"),
        {**inbox_fields(curator.get(url).content.decode()), "record": [pending.record_id], "decision": "approve"},
        HTTP_HX_REQUEST="true",
    )
    assert with_htmx.status_code == 200 and with_htmx.content.decode().lstrip().startswith('<div id="inbox"')
    assert "Approved 1 learning" in with_htmx.content.decode()
    assert learning_of(demo_store, PENDING).state == "promoted"


# --- proposals -------------------------------------------------------------------------------------


def test_a_proposal_accepted_from_the_health_page(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    [proposal] = demo_store.proposals({"tenant": "acme"}).proposals
    health = reverse("dashboard:health") + q(scope="tenant=acme")
    html = curator.get(health).content.decode()
    assert f'id="proposal-{proposal.id}"' in html and 'value="accept"' in html
    url = reverse("dashboard:proposal_settle", args=[proposal.id])
    refused = curator.post(url, {"decision": "reject", "next": health})
    assert refused.status_code == 303 and "was left as it was" in curator.get(health).content.decode()
    done = curator.post(url, {"decision": "accept", "next": health})
    assert done.status_code == 303 and done["Location"] == health
    record = demo_store.get(proposal.record_id)
    assert record is not None and record.invalid_at is not None
    assert demo_store.proposal(proposal.id).status == "accepted"  # type: ignore[union-attr]
    [entry] = entries("proposal_accept")
    assert entry.counts["proposal"] == proposal.id
    assert "Proposal #" in curator.get(health).content.decode()
    again = curator.post(url, {"decision": "reject", "reason": "too late", "next": health})
    assert again.status_code == 303 and "accepted already" in curator.get(health).content.decode()


# --- compositions ------------------------------------------------------------------------------------


def test_the_compositions_and_one_prompt_every_line_marked(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    listing = curator.get(reverse("dashboard:compositions") + q(scope="tenant=acme")).content.decode()
    assert "acme-support" in listing and SUPPORT in listing
    url = reverse("dashboard:composition") + q(scope=SUPPORT)
    page, fragment = curator.get(url), curator.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200
    html = page.content.decode()
    prompt = html[html.index('id="prompt"') : html.index("</ul>", html.index('id="prompt"'))]
    lines = re.findall(r'<li class="pl ([^"]+)">', prompt)
    assert lines and all(("pl-authored" in c) or ("pl-learned" in c) or ("pl-heading" in c) for c in lines)
    promoted = learning_of(demo_store, PROMOTED)
    assert f'href="/learnings/{promoted.record_id}/"' in prompt and f'href="/records/{promoted.record_id}/"' in prompt
    assert "Overlay" in html and "Health" in html and "Never recalled" in html


def test_a_composition_as_of_and_two_compared(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    promoted = learning_of(demo_store, PROMOTED)
    before = promoted.at.strftime("%Y-%m-%d %H:%M")
    earlier = (promoted.at.replace(second=0, microsecond=0)).strftime("%Y-%m-%d %H:%M")
    then = curator.get(reverse("dashboard:composition") + q(scope=SUPPORT, as_of="2000-01-01")).content.decode()
    assert "No composition was registered" in then
    replay = curator.get(reverse("dashboard:composition") + q(scope=SUPPORT, as_of=earlier)).content.decode()
    assert "The past:" in replay and "Roll back…" not in replay
    compared = curator.get(reverse("dashboard:composition_diff") + q(scope=SUPPORT, from_time=earlier)).content.decode()
    assert "What changed" in compared and before
    unknown = curator.get(reverse("dashboard:composition") + q(scope=SUPPORT, version="0" * 12))
    assert unknown.status_code == 400 and "No composition" in unknown.content.decode()
    version = DEMO_COMPOSITION.version
    own = curator.get(reverse("dashboard:composition") + q(scope=SUPPORT, version=version[:12]))
    assert own.status_code == 200 and version[:12] in own.content.decode()


def test_a_composition_is_never_narrowed_to_another_scope(client_for: Any, demo_store: InMemoryMemoryStore) -> None:
    dana = client_for("curator", "tenant=acme,user=dana")
    assert dana.get(reverse("dashboard:composition") + q(scope=SUPPORT)).status_code == 404


# --- what it learned ----------------------------------------------------------------------------------


def test_what_it_learned_chart_table_and_exports(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    url = reverse("dashboard:learned") + q(scope="tenant=acme")
    page, fragment = curator.get(url), curator.get(url, HTTP_HX_REQUEST="true")
    assert page.status_code == fragment.status_code == 200
    html = page.content.decode()
    assert '<script id="learned-series" type="application/json">' in html
    assert "Finance quotes calendar days" in html and "rollback" in html and "the gate chain" in html
    assert "This week" in html
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    curator.get(reverse("dashboard:learned_export_csv") + q(scope="tenant=acme")).streaming_content
                ).decode()
            )
        )
    )  # type: ignore[attr-defined]
    assert {row["change"] for row in rows} == {"promoted", "demoted"}
    rolled = [row for row in rows if row["cause"] == "rollback"]
    assert rolled and rolled[0]["actor"] == "lena" and rolled[0]["content"] == "Quote refund times in business days."
    lines = (
        b"".join(curator.get(reverse("dashboard:learned_export_jsonl") + q(scope="tenant=acme")).streaming_content)
        .decode()
        .splitlines()
    )  # type: ignore[attr-defined]
    assert len(lines) == len(rows) and json.loads(lines[0])["transition"]["state"] in ("promoted", "demoted")
    [entry] = entries("export_learned")
    assert entry.counts["exports"] == 2 and entry.counts["rows"] == len(rows)


def test_what_it_learned_this_week_and_bad_ranges(curator: Client) -> None:
    base = reverse("dashboard:learned")
    bad = curator.get(base + q(scope="tenant=acme", since="2026-02-01", until="2026-01-01"))
    assert bad.status_code == 400
    empty = curator.get(base + q(scope="tenant=acme", until="2000-01-02")).content.decode()
    assert "Nothing learned here" in empty


def test_an_examples_payload_is_edited_too(curator: Client, demo_store: InMemoryMemoryStore) -> None:
    example = learning_of(demo_store, "Asking for the booking reference before the refund")
    edit_url = reverse("dashboard:learning_edit", args=[example.record_id])
    html = curator.get(edit_url).content.decode()
    assert "Its payload (JSON)" in html and "scenario" in html
    pin = re.search(r'name="pin" value="([^"]+)"', html)
    assert pin is not None and example.record is not None
    fields = {"content": example.record.content, "pin": pin.group(1).replace("&quot;", '"')}
    bad = curator.post(reverse("dashboard:learning_edit_run", args=[example.record_id]), {**fields, "payload": "{"})
    assert bad.status_code == 303 and "That is not JSON" in curator.get(edit_url).content.decode()
    same = curator.post(
        reverse("dashboard:learning_edit_run", args=[example.record_id]),
        {**fields, "payload": json.dumps(example.record.payload)},
    )
    assert same.status_code == 303 and "change it, or approve it as is" in curator.get(edit_url).content.decode()
    payload = {**(example.record.payload or {}), "good": "Ask for the six-letter booking reference first."}
    done = curator.post(
        reverse("dashboard:learning_edit_run", args=[example.record_id]), {**fields, "payload": json.dumps(payload)}
    )
    assert done.status_code == 303
    assert "Ask for the six-letter booking reference first." in prompt_text(demo_store)
    record_page = curator.get(reverse("dashboard:record", args=[example.record_id])).content.decode()
    assert f'href="/learnings/{example.record_id}/"' in record_page, "a targeted record links to its review"
