"""Bidirectional controls in user text are isolated and shown, never obeyed: the
``isolate`` filter, and the pages that print records through it."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from memory_admin.dashboard.templatetags.memory import BIDI_CONTROLS, isolate, provenance
from memory_admin.records import Provenance
from memory_admin.store import InMemoryMemoryStore
from tests.dashboard.conftest import MakeClient

RLO = "\u202e"


def test_isolate_escapes_wraps_and_shows_every_control() -> None:
    assert isolate("<b>x</b>") == "<bdi>&lt;b&gt;x&lt;/b&gt;</bdi>"
    assert isolate(None) == "<bdi></bdi>"
    for control in BIDI_CONTROLS:
        shown = isolate(f"a{control}b")
        assert control not in shown and f"⟨U+{ord(control):04X}⟩" in shown and shown.startswith("<bdi>a")


def test_the_filter_is_everywhere_and_autoescape_does_not_double_escape() -> None:
    rendered = Template("{{ text|isolate|linebreaksbr }}").render(Context({"text": f"a & b\n{RLO}c"}))
    assert rendered.startswith("<bdi>a &amp; b<br>") and "⟨U+202E⟩" in rendered and RLO not in rendered


def test_provenance_isolates_each_value() -> None:
    html = provenance(Provenance(source="chat", author=f"eve{RLO}", conversation_id="c<1>", run_id=None))
    assert html.startswith('by <bdi>eve<span class="bidi-mark"')
    assert " · via <bdi>chat</bdi> · conversation <bdi>c&lt;1&gt;</bdi>" in html and RLO not in html
    assert provenance(Provenance(source="chat")) == "via <bdi>chat</bdi>"


@pytest.fixture
def hostile(demo_store: InMemoryMemoryStore) -> str:
    [record] = demo_store.write(
        [
            {
                "scope": {"tenant": "acme", "user": "dana"},
                "kind": "preference",
                "content": f"Dana prefers {RLO}tae{RLO} seats",
                "key": f"seat{RLO}",
                "tags": [f"{RLO}travel"],
                "provenance": {"source": f"chat{RLO}", "author": f"bot{RLO}", "conversation_id": f"c{RLO}"},
            }
        ]
    )
    return record.id


@pytest.mark.django_db
def test_record_pages_show_markers_for_content_tags_key_and_provenance(client_for: MakeClient, hostile: str) -> None:
    officer: Client = client_for("privacy-officer", "tenant=acme")
    for name in ("record", "invalidate", "correct", "delete"):
        html = officer.get(reverse(f"dashboard:{name}", args=[hostile])).content.decode()
        if name == "correct":  # the form's textarea holds the text to edit, as it is
            html = html[: html.index("<textarea")] + html[html.index("</textarea>") :]
        assert RLO not in html, name
        assert "⟨U+202E⟩" in html, name
    record = officer.get(reverse("dashboard:record", args=[hostile])).content.decode()
    assert "<code><bdi>seat<span" in record and "#<bdi><span" in record and "by <bdi>bot<span" in record


@pytest.mark.django_db
def test_lists_isolate_content_and_tags(client_for: MakeClient, hostile: str) -> None:
    viewer = client_for("viewer", "tenant=acme")
    html = viewer.get(reverse("dashboard:browse") + "?" + urlencode({"scope": "tenant=acme,user=dana"})).content
    assert RLO.encode() not in html and b"<bdi>Dana prefers <span" in html
