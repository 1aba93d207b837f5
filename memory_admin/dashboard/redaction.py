"""What the audit log may keep about forgotten data: keyed hashes, never content.

Two rules, both applied here:

* **A reason never quotes a record.** :func:`quoted_fragment` finds a reason that
  repeats the record's text — :data:`QUOTE_WORDS` or more of its words in a row
  (:data:`QUOTE_MIN_CHARS` characters at least), or any :data:`QUOTE_RUN_CHARS`
  characters of it, ignoring case, spacing and punctuation — and the forms refuse it.
* **An erased scope's values become keyed hashes.** When a scope is erased, every
  audit entry about it (inside it) gets its scope values (all but the tenant, the
  grant boundary) replaced by ``hmac:<hex>`` tokens and its reason removed; the
  erasure's own reason, and every other reason in the tenant, get the erased values
  replaced by the same tokens. The key is ``MEMORY_ADMIN_AUDIT_KEY`` when set, else
  derived from ``SECRET_KEY``, so "was user X erased, when, by whom?" stays answerable
  (:func:`erasures_of`, ``manage.py memory_audit_lookup``) by someone who knows X —
  and by nobody who only reads the database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.crypto import salted_hmac

from memory_admin.dashboard.models import AuditEntry
from memory_admin.errors import MemoryValidationError
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, format_scope, parse_scope_text, scope_json

HASH_PREFIX = "hmac:"
HASH_HEX = 24  # 96 bits: no collisions in any audit log, short enough to read
QUOTE_WORDS = 3
QUOTE_MIN_CHARS = 16
QUOTE_RUN_CHARS = 20
MIN_REPLACED_CHARS = 3  # shorter erased values ("a", "42") are not hunted for in free text
_SALT = "memory_admin.dashboard.audit_log.scope-value"
_WORD = re.compile(r"[^\W_]+")


# --- reasons that quote a record ----------------------------------------------------------


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def quoted_fragment(reason: str, texts: Iterable[str]) -> str | None:
    """The part of ``reason`` that quotes one of ``texts`` (normalised: lower case, words
    only), or ``None`` when it quotes none of them."""
    said = _words(reason)
    if not said:
        return None
    spoken = " " + " ".join(said) + " "
    squeezed = "".join(said)
    for text in texts:
        words = _words(text)
        for start in range(len(words)):
            end = start
            # the longest run of the text's words, from ``start``, that the reason repeats
            while end < len(words) and f" {' '.join(words[start : end + 1])} " in spoken:
                end += 1
            run = " ".join(words[start:end])
            if end - start >= QUOTE_WORDS and len(run) >= QUOTE_MIN_CHARS:
                return run
        joined = "".join(words)
        for start in range(max(0, len(squeezed) - QUOTE_RUN_CHARS + 1)):
            window = squeezed[start : start + QUOTE_RUN_CHARS]
            if len(window) == QUOTE_RUN_CHARS and window in joined:
                return window
    return None


def quote_error(fragment: str) -> str:
    shown = fragment if len(fragment) <= 60 else fragment[:57] + "…"
    return (
        f"The reason quotes the record (“{shown}”). The audit log outlives the record, so it must "
        "not repeat its content: say why in your own words, or refer to the record by its id."
    )


# --- keyed hashes of scope values ---------------------------------------------------------


def _key() -> str:
    dedicated: str = getattr(settings, "MEMORY_ADMIN_AUDIT_KEY", "") or ""
    secret: str = dedicated or settings.SECRET_KEY
    return secret


def value_token(key: str, value: str) -> str:
    """The keyed hash that stands for ``key=value`` in the audit log."""
    digest = salted_hmac(_SALT, f"{key}={value}", secret=_key(), algorithm="sha256").hexdigest()
    return HASH_PREFIX + digest[:HASH_HEX]


def is_token(value: str) -> bool:
    return value.startswith(HASH_PREFIX)


def hashed_scope(scope: Mapping[str, str]) -> Scope:
    """``scope`` with every value but the tenant's replaced by its keyed hash."""
    return {
        key: value if key == TENANT_KEY or is_token(value) else value_token(key, value)
        for key, value in canonical_scope(scope).items()
    }


def grant_covers(grant: Mapping[str, str], entry_scope: Mapping[str, str]) -> bool:
    """True when an entry's (possibly hashed) scope lies inside ``grant``: the grant's
    values are hashed wherever the entry's are."""
    for key, value in grant.items():
        held = entry_scope.get(key)
        if held is None:
            return False
        if not _same_value(key, held, value):
            return False
    return True


def _same_value(key: str, one: str, other: str) -> bool:
    """Equal values, or one the keyed hash of the other."""
    if one == other:
        return True
    if is_token(one) != is_token(other):
        token, raw = (one, other) if is_token(one) else (other, one)
        return token == value_token(key, raw)
    return False


def _inside(entry_scope: Mapping[str, str], scope: Mapping[str, str]) -> bool:
    return grant_covers(scope, entry_scope)


def _replace_values(text: str, pairs: Mapping[str, str]) -> str:
    """``text`` with each erased value (as a whole word, any case) replaced by its token."""
    for key, value in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
        if key == TENANT_KEY or len(value) < MIN_REPLACED_CHARS or is_token(value):
            continue
        pattern = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)", re.IGNORECASE)
        text = pattern.sub(value_token(key, value), text)
    return text


def _hashed_scope_text(text: str) -> str:
    try:
        return format_scope(hashed_scope(parse_scope_text(text)))
    except MemoryValidationError:  # an unreadable text is dropped rather than kept raw
        return HASH_PREFIX + "unreadable"


def removed_reason(erasure_id: int) -> str:
    return f"(removed when the scope was erased, audit entry #{erasure_id})"


@transaction.atomic
def scrub_erased_scope(erasure: AuditEntry, scope: Mapping[str, str]) -> int:
    """After ``scope`` was erased: hash its values and drop the reasons of every entry
    about it, and hash the erased values in the tenant's other reasons. Returns how
    many entries changed."""
    canonical = canonical_scope(scope)
    tenant = canonical[TENANT_KEY]
    values = {key: value for key, value in canonical.items() if key != TENANT_KEY}
    changed = 0
    for entry in AuditEntry.objects.select_for_update().filter(tenant=tenant):
        before: tuple[Any, ...] = (entry.scope_json, entry.reason, entry.error, json.dumps(entry.counts))
        entry_scope = entry.scope
        if entry.pk == erasure.pk:
            entry.scope_json = scope_json(hashed_scope(entry_scope))
            entry.reason = _replace_values(entry.reason, {**values, **_all_values(entry)})
            scope_list = entry.counts.get("scope_list")
            if isinstance(scope_list, list):
                entry.counts = {**entry.counts, "scope_list": [_hashed_scope_text(str(t)) for t in scope_list]}
        elif _inside(entry_scope, canonical):
            entry.scope_json = scope_json(hashed_scope(entry_scope))
            if entry.reason:
                entry.reason = removed_reason(erasure.pk)
        else:
            entry.reason = _replace_values(entry.reason, values)
        entry.error = _replace_values(entry.error, values)
        if (entry.scope_json, entry.reason, entry.error, json.dumps(entry.counts)) != before:
            entry.save(update_fields=["scope_json", "reason", "error", "counts"])
            changed += 1
    return changed


def _all_values(entry: AuditEntry) -> dict[str, str]:
    """The raw values the erasure's receipt names (its scope list), to hash in its reason."""
    found: dict[str, str] = {}
    for text in entry.counts.get("scope_list") or []:
        try:
            found.update(parse_scope_text(str(text)))
        except MemoryValidationError:  # not a scope text: nothing to take from it
            continue
    return found


def erasures_of(scope: Mapping[str, str]) -> list[AuditEntry]:
    """Every audit entry about ``scope`` (raw or hashed) — actions inside it, and erasures
    of a broader scope that took it too: "was it erased, when, by whom?"."""
    canonical = canonical_scope(scope)
    entries = AuditEntry.objects.filter(tenant=canonical[TENANT_KEY]).order_by("id")
    return [
        entry
        for entry in entries
        if _inside(entry.scope, canonical)
        or (entry.action == AuditEntry.Action.ERASE and _inside(canonical, entry.scope))
    ]
