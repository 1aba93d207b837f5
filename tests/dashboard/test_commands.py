"""memory_user, memory_demo and memory_import."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from memory_admin.dashboard.management.wording import counted
from memory_admin.dashboard.permissions import grants_of, role_of
from memory_admin.store import RecordListQuery, SqliteMemoryStore, open_store

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_user_with_role_and_grants() -> None:
    out = run(
        "memory_user", "create", "cora", "--role", "curator", "--grant", "tenant=acme", "--password", "s3cret-pw!"
    )
    assert "Created cora" in out and "curator — sees tenant=acme" in out
    user = User.objects.get(username="cora")
    assert user.check_password("s3cret-pw!")
    role = role_of(user)
    assert role is not None and role.slug == "curator"
    assert user.has_perm("dashboard.curate_memory") and not user.has_perm("dashboard.forget_memory")
    assert grants_of(user) == [{"tenant": "acme"}]


def test_create_without_password_prints_a_random_one() -> None:
    out = run("memory_user", "create", "pat", "--role", "privacy_officer", "--grant", "tenant=acme,user=dana")
    password = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("Password: "))
    assert len(password) >= 12 and User.objects.get(username="pat").check_password(password)
    assert "privacy officer — sees tenant=acme,user=dana" in out


def test_create_twice_fails_unless_update() -> None:
    run("memory_user", "create", "vic", "--role", "viewer", "--password", "pw-one-1234")
    with pytest.raises(CommandError, match="exists"):
        run("memory_user", "create", "vic", "--role", "viewer")
    out = run("memory_user", "create", "vic", "--role", "admin", "--password", "pw-two-1234", "--update")
    assert "Updated vic" in out and "admin — sees every tenant" in out
    assert User.objects.get(username="vic").check_password("pw-two-1234")


def test_viewer_without_grants_is_warned() -> None:
    out = run("memory_user", "create", "nog", "--role", "viewer", "--password", "pw-123456")
    assert "sees nothing until granted" in out


def test_grant_revoke_role_show_list() -> None:
    run("memory_user", "create", "gil", "--role", "viewer", "--password", "pw-123456")
    assert "sees tenant=acme, tenant=globex" in run("memory_user", "grant", "gil", "tenant=acme", "tenant=globex")
    assert "sees tenant=globex" in run("memory_user", "revoke", "gil", "tenant=acme")
    assert "curator" in run("memory_user", "role", "gil", "curator")
    assert run("memory_user", "show", "gil").startswith("gil: curator")
    assert "gil: curator" in run("memory_user", "list")
    gil = User.objects.get(username="gil")
    assert not gil.has_perm("dashboard.forget_memory")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "x", "--role", "overlord"), "unknown role"),
        (("create", "x", "--role", "viewer", "--grant", "user=dana"), "non-blank tenant"),
        (("grant", "nobody", "tenant=acme"), "No user 'nobody'"),
    ],
)
def test_user_command_errors(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("memory_user", *args)


def test_demo_is_idempotent_on_a_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    assert "Wrote" in run("memory_demo", "--store", url)
    with SqliteMemoryStore(tmp_path / "memory.sqlite3") as store:
        before = {t: store.count_records({"tenant": t}) for t in ("acme", "globex", "initech")}
        events = len(store.query_events({"types": ["agent.memory.recall"], "limit": 1000}))
    assert "already in the store" in run("memory_demo", "--store", url)
    with SqliteMemoryStore(tmp_path / "memory.sqlite3") as store:
        assert {t: store.count_records({"tenant": t}) for t in ("acme", "globex", "initech")} == before
        assert len(store.query_events({"types": ["agent.memory.recall"], "limit": 1000})) == events
        assert events >= 10
        assert before["acme"].expired >= 2 and before["acme"].invalidated >= 5
        # history has real dates: weeks apart, and nothing in the future
        query = RecordListQuery.model_validate(
            {
                "search": {"scope": {"tenant": "acme"}, "include_invalidated": True, "limit": 1000},
                "include_expired": True,
            }
        )
        dates = sorted(hit.record.created_at for hit in store.list_records(query).hits)
        assert (dates[-1] - dates[0]).days >= 20


def test_demo_refuses_an_in_process_store() -> None:
    with pytest.raises(CommandError, match="memory://"):
        run("memory_demo", "--store", "memory://")


def browse_the_demo(url: str, settings: object, client_for: object) -> None:
    """The whole path over a real backend: demo → browse → record chain → scope page → confinement."""
    from django.test import Client

    from memory_admin.dashboard.stores import reset_stores

    run("memory_demo", "--store", url)
    assert "already in the store" in run("memory_demo", "--store", url)
    settings.MEMORY_STORE_URL = url  # type: ignore[attr-defined]
    reset_stores()
    try:
        client: Client = client_for("viewer", "tenant=acme")  # type: ignore[operator]
        page = client.get("/?scope=tenant%3Dacme%2Cuser%3Ddana&key=drink").content.decode()
        assert "Dana has switched to green tea" in page
        record_id = page.split('href="/records/')[1].split("/")[0]
        response = client.get(f"/records/{record_id}/")
        assert response.status_code == 200 and "4 versions" in response.content.decode()
        mei = client.get("/?scope=tenant%3Dacme%2Cuser%3Dmei&key=payment").content.decode()
        amex = client.get("/records/" + mei.split('href="/records/')[1].split("/")[0] + "/").content.decode()
        assert "Deleted version" in amex and "4421" not in amex
        assert client.get("/scopes/?scope=tenant%3Dacme").status_code == 200
        assert client.get("/?scope=tenant%3Dacme&q=aisle").status_code == 200
        assert client.get("/?scope=tenant%3Dglobex").status_code == 404
        # Dashboard II over the same backend: the graphs read its event log, one event
        # drills down, the preview logs nothing, the export streams, curation is audited
        recall = client.get("/recall/").content.decode()
        assert '<span class="value">10</span> recalls' in recall
        event_id = recall.split('href="/recall/events/')[1].split("/")[0]
        assert client.get(f"/recall/events/{event_id}/").status_code == 200
        with open_store(url) as store:
            logged = len(store.query_events({"limit": 10_000, "include_previews": True}))
            preview = client.get("/recall/preview/?scope=tenant%3Dacme%2Cuser%3Ddana&message=flight")
            assert preview.status_code == 200 and "The block, exactly" in preview.content.decode()
            assert len(store.query_events({"limit": 10_000, "include_previews": True})) == logged
        lines = b"".join(client.get("/export.jsonl?scope=tenant%3Dacme%2Cuser%3Ddana").streaming_content)
        assert lines.count(b"\n") > 10 and b"green tea" in lines
        curator: Client = client_for("curator", "tenant=acme")  # type: ignore[operator]
        response = curator.post(f"/records/{record_id}/invalidate/run/", {"reason": "checked on this backend"})
        assert response.status_code == 303
        assert "checked on this backend" in curator.get(f"/records/{record_id}/").content.decode()
    finally:
        reset_stores()


def test_dashboard_over_the_demo_sqlite_file(tmp_path: Path, settings: object, client_for: object) -> None:
    browse_the_demo(f"sqlite:///{tmp_path / 'memory.sqlite3'}", settings, client_for)


@pytest.mark.postgres
def test_dashboard_over_the_demo_in_postgresql(postgres_url: str, settings: object, client_for: object) -> None:
    browse_the_demo(postgres_url, settings, client_for)


def test_memory_import_dates_facts_when_they_were_stated(tmp_path: Path) -> None:
    lines = tmp_path / "facts.jsonl"
    lines.write_text(
        '{"scope": {"tenant": "acme", "user": "dana"}, "kind": "fact", "content": "Dana moved to Lisbon.",'
        ' "provenance": {"source": "transcript"}}\n'
        '{"scope": {"tenant": "acme", "user": "dana"}, "kind": "fact", "content": "Dana adopted a cat.",'
        ' "provenance": {"source": "transcript"}, "observed_at": "2022-01-02T03:04:05+00:00"}\n',
        encoding="utf-8",
    )
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    out = run("memory_import", str(lines), "--store", url, "--observed-at", "2023-05-08T13:56:00+00:00")
    assert "Imported 2 records" in out
    with open_store(url) as store:
        stated = {
            h.record.content: h.record.observed_at.isoformat() for h in store.search({"scope": {"tenant": "acme"}})
        }
    assert stated == {
        "Dana moved to Lisbon.": "2023-05-08T13:56:00+00:00",
        "Dana adopted a cat.": "2022-01-02T03:04:05+00:00",
    }
    with pytest.raises(CommandError, match="observed_at"):
        run("memory_import", str(lines), "--store", url, "--observed-at", "2999-01-01T00:00:00+00:00")


def test_memory_import_refuses_what_is_not_json_lines_before_reading_it_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    endless = tmp_path / "zeros"  # as /dev/zero reads: NUL bytes, no line end (bounded here)
    endless.write_bytes(b"\0" * 3_000_000)
    with pytest.raises(CommandError, match=r"line 1 holds more than 1,000,000 characters"):
        run("memory_import", str(endless), "--store", url)
    backup = tmp_path / "backup.sqlite3"
    SqliteMemoryStore(tmp_path / "other.sqlite3").close()
    backup.write_bytes((tmp_path / "other.sqlite3").read_bytes())
    with pytest.raises(CommandError, match=r"not UTF-8 text.*memory-admin restore"):
        run("memory_import", str(backup), "--store", url)
    good = tmp_path / "one.jsonl"
    good.write_text('{"scope": {"tenant": "acme"}, "kind": "fact", "content": "x", "provenance": {"source": "t"}}\n')
    for size in ("0", "-1", "ten", "10001"):
        with pytest.raises(CommandError, match=r"is not a count|more than the store takes"):
            run("memory_import", str(good), "--store", url, "--batch-size", size)
    assert "Imported 1 record into" in run("memory_import", str(good), "--store", url, "--batch-size", "1")
    with open_store(url) as store:
        assert len(store.search({"scope": {"tenant": "acme"}})) == 1, "nothing from the refused files"


def test_memory_import_names_the_bad_line_and_what_was_written_before_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    good = '{"scope": {"tenant": "acme"}, "kind": "fact", "content": "x", "provenance": {"source": "t"}}'
    bad = '{"scope": {"tenant": "acme"}, "kind": "nonsense", "content": "x", "provenance": {"source": "t"}}'
    lines = tmp_path / "in.jsonl"
    lines.write_text("\n".join([good, good, "", good, bad, good]) + "\n")
    with pytest.raises(CommandError) as refused:
        run("memory_import", str(lines), "--store", url, "--batch-size", "2")
    message = str(refused.value)
    assert message.startswith("Invalid line 5: kind: Input should be 'fact'")
    assert "lines 4–5 were not written (one batch, all or nothing)" in message
    assert "the 2 records before line 4 were: import the rest from line 4 on" in message
    with open_store(url) as store:
        assert store.count_records({"tenant": "acme"}).total == 2
    lines.write_text(good + "\nnot json\n")
    with pytest.raises(CommandError, match=r"^line 2: not JSON .*; nothing was written \(lines 1–2: one batch"):
        run("memory_import", str(lines), "--store", f"sqlite:///{tmp_path / 'other.sqlite3'}")


def test_memory_stats_reports_dropped_events(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with open_store(url) as store:
        dana = {"tenant": "acme", "user": "dana"}
        store.write([{"scope": dana, "kind": "fact", "content": "x", "provenance": {"source": "t"}}])
        assert isinstance(store, SqliteMemoryStore)
        store._commit_events([], 3)  # what a buffer that dropped three events reports with its next batch
    out = run("memory_stats", "--store", url)
    assert "Event log: 3 events dropped (a writer fell behind" in out
    assert "tenant=acme: 1 record (1 live" in out
    assert "  user: 1 value\n" in out
    assert "withheld" not in out


def test_memory_stats_reports_events_withheld_after_a_forgetting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with open_store(url, event_flush_interval=60) as store:
        store.write([{"scope": {"tenant": "acme"}, "kind": "fact", "content": "x", "provenance": {"source": "t"}}])
        store.erase({"tenant": "acme"})
        store.search({"scope": {"tenant": "acme"}, "query": "x"})  # within FORGET_MARGIN of the erasure
    out = run("memory_stats", "--store", url)
    assert "Event log: 0 events dropped\n" in out
    assert "Event log: 1 event withheld (it predated a delete or erasure in its tenant)" in out


READERS = [
    ("memory_stats",),
    ("memory_search", "tenant=acme", "tea"),
    ("memory_scrub",),
    ("memory_events_prune", "--older-than", "30d"),
    ("memory_learnings", "--scope", "tenant=acme"),
    ("memory_promote", "--scope", "tenant=acme", "--dry-run"),
    ("memory_embed", "--no-progress"),
]


@pytest.mark.parametrize("args", READERS, ids=[args[0] for args in READERS])
@pytest.mark.parametrize("form", ["url", "path"])
def test_a_command_that_reads_refuses_a_memory_file_that_is_not_there(
    args: tuple[str, ...], form: str, tmp_path: Path
) -> None:
    """A mistyped path is named as missing, not created and read as an empty store."""
    missing = tmp_path / "typo" / "memory.sqlite3"
    store = f"sqlite:///{missing}?embedder=none" if form == "url" else str(missing)
    with pytest.raises(CommandError, match=f"No memory file at {missing}"):
        run(*args, "--store", store)
    assert not missing.parent.exists()


def test_a_copy_refuses_a_source_that_is_not_there(tmp_path: Path) -> None:
    target = tmp_path / "copy.sqlite3"
    with pytest.raises(CommandError, match="No memory file at"):
        run("memory_copy", "--from", f"sqlite:///{tmp_path / 'nope.sqlite3'}", "--to", f"sqlite:///{target}")
    assert not target.exists()


def test_a_command_that_reads_opens_a_file_that_is_there(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    with SqliteMemoryStore(path) as store:
        dana = {"tenant": "acme", "user": "dana"}
        store.write(
            [{"scope": dana, "kind": "fact", "content": "Dana drinks green tea.", "provenance": {"source": "t"}}]
        )
    assert "green tea" in run("memory_search", "tenant=acme", "tea", "--store", str(path), "--mode", "keyword")


COUNTED = [
    ("memory_search", "tenant=acme", "--limit"),
    ("memory_learnings", "--scope", "tenant=acme", "--limit"),
    ("memory_import", "in.jsonl", "--batch-size"),
    ("memory_embed", "--batch-size"),
    ("memory_copy", "--from", "a.sqlite3", "--to", "b.sqlite3", "--batch-size"),
]


@pytest.mark.parametrize("args", COUNTED, ids=[args[0] for args in COUNTED])
@pytest.mark.parametrize("value", ["0", "-5", "ten"])
def test_a_count_below_one_is_refused_before_anything_opens(
    args: tuple[str, ...], value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CommandError, match=f"'{value}' is not a count: give a whole number, 1 or more"):
        run(*args, value)
    assert list(tmp_path.iterdir()) == []  # no store file made for a refused command


def test_the_commands_count_in_english(tmp_path: Path) -> None:
    assert (counted(1, "record"), counted(0, "record"), counted(12_345, "event")) == (
        "1 record",
        "0 records",
        "12,345 events",
    )
    one = tmp_path / "one.jsonl"
    line = '{"scope": {"tenant": "acme"}, "kind": "fact", "content": "x", "provenance": {"source": "t"}}'
    one.write_text(f"{line}\n{{\n")
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    with pytest.raises(CommandError, match="the 1 record before line 2 was: import the rest from line 2 on"):
        run("memory_import", str(one), "--store", url, "--batch-size", "1")
    backups = tmp_path / "backups"
    assert "Backed up 1 record and " in run("memory_backup", f"{backups}/", "--store", url)
