"""What the audit log may keep about forgotten data: keyed hashes, never content.

Three rules, all applied here:

* **A reason never quotes a record.** :func:`quoted_fragment` finds a reason that
  repeats the record's text — :data:`QUOTE_WORDS` or more of its words in a row
  (:data:`QUOTE_MIN_CHARS` characters at least), or any :data:`QUOTE_RUN_CHARS`
  characters of it, ignoring case, spacing and punctuation — and the forms refuse it.
* **Forgetting removes its content from every reason.** A deletion or an erasure
  redacts the reasons (and errors) of every entry in the tenant, its own included,
  against what it forgets (:class:`Forgotten`): each word the forgotten records hold
  (a number, a code, a name — anything but the commonest English words and single
  characters), and each number or code written another way, becomes
  :data:`REMOVED`. So a short identifier the quoting rule let through ("078-05-8227 is
  wrong") does not outlive the record. Other words stay as the person typed them.
* **An erased scope's values become keyed hashes.** When a scope is erased, every
  audit entry about it (inside it) gets its scope values (all but the tenant, the
  grant boundary) replaced by ``hmac:<hex>`` tokens, and so do the same values
  wherever they stand in the tenant's reasons, the erasure's own included. The key is
  ``MEMORY_ADMIN_AUDIT_KEY`` when set, else derived from ``SECRET_KEY``, so "was user X
  erased, when, by whom?" stays answerable (:func:`erasures_of`, ``manage.py
  memory_audit_lookup``) by someone who knows X — and by nobody who only reads the
  database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.crypto import salted_hmac

from memory_admin.dashboard.models import AuditEntry
from memory_admin.errors import MemoryValidationError
from memory_admin.records import MemoryRecord
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, format_scope, parse_scope_text, scope_json
from memory_admin.tokenize import words

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


# --- forgotten content, removed from reasons -----------------------------------------------

REMOVED = "[forgotten]"
"""What stands in a reason for words of forgotten content."""
MIN_CODE_CHARS = 4
"""A number or code at least this long is also found written another way (``078058227``
for ``078-05-8227``, ``ERSCAN`` of ``ERSCAN48227``)."""
_SPARED = """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out over
    own same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while
    who whom why will with would you your"""
SPARED_WORDS = frozenset(_SPARED.split())
"""The commonest English words: they identify no one, so a reason keeps them even when the
forgotten records hold them too."""
_REASON_TOKEN = re.compile(rf"{re.escape(REMOVED)}|{re.escape(HASH_PREFIX)}[0-9a-f]+|[^\W_]+")


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


class Forgotten:
    """What a deletion or an erasure forgets, as the audit log's reasons are redacted
    against it: the words of the records' content, key, tags and payload values, folded
    as search folds them (case and accents ignored; endings count, since a name or a
    number has none worth ignoring and a common word that shares a stem identifies no
    one)."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.words: set[str] = set()
        self._codes: set[str] = set()  # words with a digit, and runs of them joined
        self._joined = ""  # the codes, searchable as one text (made when first needed)
        for text in texts:
            self.add(text)

    @classmethod
    def of(cls, records: Iterable[MemoryRecord]) -> Forgotten:
        return cls(text for record in records for text in record_texts(record))

    def add(self, text: str) -> None:
        found = words(text)
        self.words.update(found)
        run: list[str] = []
        for word in [*found, ""]:
            if word and _has_digit(word):
                run.append(word)
                continue
            if run:
                self._codes.update(run)
                self._codes.add("".join(run))
                run = []
        self._joined = ""

    def identifies(self, word: str) -> bool:
        """Whether ``word`` (folded) is forgotten content that could identify someone: a
        word of the forgotten text, unless it is one of :data:`SPARED_WORDS`, a single
        character or a number of one or two digits; or a number or code of
        :data:`MIN_CODE_CHARS` characters or more written another way."""
        if len(word) < 2 or word in SPARED_WORDS or _small_number(word):
            return False
        if word in self.words:
            return True
        if len(word) < MIN_CODE_CHARS or not self._codes:
            return False
        if not self._joined:
            self._joined = "\x00".join(sorted(self._codes))
        if word in self._joined:  # part of a forgotten number or code
            return True
        return _has_digit(word) and any(
            word[start : start + size] in self._codes
            for size in range(MIN_CODE_CHARS, len(word))
            for start in range(len(word) - size + 1)
        )

    def redact(self, text: str, *, spare: Iterable[str] = ()) -> str:
        """``text`` with every word that :meth:`identifies` replaced by :data:`REMOVED`:
        several in a row, with nothing but spaces, punctuation and small numbers between
        them (``078-05-8227``), by one. Keyed hashes, earlier removals and the words of
        ``spare`` stay."""
        if not text or not self.words:
            return text
        spared = {word for value in spare for word in words(value)}
        tokens = list(_REASON_TOKEN.finditer(text))
        folded = ["".join(words(token.group())) for token in tokens]
        hits = [
            not token.group().startswith((REMOVED, HASH_PREFIX)) and word not in spared and self.identifies(word)
            for token, word in zip(tokens, folded, strict=True)
        ]
        for index, token in enumerate(tokens):  # small numbers between two removals go with them
            if index and hits[index - 1] and not hits[index] and _small_number(token.group()):
                following = next((i for i in range(index + 1, len(tokens)) if not _small_number(tokens[i].group())), 0)
                hits[index] = bool(following) and hits[following]
        out: list[str] = []
        last = 0
        for index, token in enumerate(tokens):
            between = text[last : token.start()]
            if not hits[index]:
                out += [between, token.group()]
            elif index == 0 or not hits[index - 1]:
                out += [between, REMOVED]
            last = token.end()
        out.append(text[last:])
        return "".join(out)


def _small_number(word: str) -> bool:
    return len(word) <= 2 and word.isdigit()


def record_texts(record: MemoryRecord) -> Iterator[str]:
    """The text a record forgets: its content, key, tags and its payload's values."""
    yield record.content
    if record.key:
        yield record.key
    yield from record.tags
    if record.payload is not None:
        yield from _strings(record.payload)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


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


@transaction.atomic
def scrub_erased_scope(erasure: AuditEntry, scope: Mapping[str, str], forgotten: Forgotten) -> int:
    """After ``scope`` was erased: hash the scope values of every entry about it (inside
    it), and in every reason and error of the tenant, the erasure's own included, hash
    the erased values (and an entry's own hashed ones) and remove the erased records'
    words (``forgotten``); every other word stays. Returns how many entries changed."""
    canonical = canonical_scope(scope)
    tenant = canonical[TENANT_KEY]
    values = {key: value for key, value in canonical.items() if key != TENANT_KEY}
    changed = 0
    for entry in AuditEntry.objects.select_for_update().filter(tenant=tenant):
        before: tuple[Any, ...] = (entry.scope_json, entry.reason, entry.error, json.dumps(entry.counts))
        # the values written as keyed hashes wherever they stand in the entry's text: the
        # erased ones, and for an entry about the scope its own, for the receipt the
        # scopes it lists
        hashed = values
        if entry.pk == erasure.pk:
            hashed = {**values, **_all_values(entry)}
            scope_list = entry.counts.get("scope_list")
            if isinstance(scope_list, list):
                entry.counts = {**entry.counts, "scope_list": [_hashed_scope_text(str(t)) for t in scope_list]}
            entry.scope_json = scope_json(hashed_scope(entry.scope))
        elif _inside(entry.scope, canonical):
            hashed = {**values, **entry.scope}
            entry.scope_json = scope_json(hashed_scope(entry.scope))
        entry.reason = forgotten.redact(_replace_values(entry.reason, hashed))
        entry.error = forgotten.redact(_replace_values(entry.error, hashed))
        if (entry.scope_json, entry.reason, entry.error, json.dumps(entry.counts)) != before:
            entry.save(update_fields=["scope_json", "reason", "error", "counts"])
            changed += 1
    return changed


@transaction.atomic
def scrub_forgotten_content(tenant: str, forgotten: Forgotten) -> int:
    """After a deletion in ``tenant``: remove the deleted record's words (``forgotten``)
    from the reason and error of every entry in the tenant. Returns how many changed."""
    changed = 0
    for entry in AuditEntry.objects.select_for_update().filter(tenant=tenant):
        reason, error = forgotten.redact(entry.reason), forgotten.redact(entry.error)
        if (reason, error) != (entry.reason, entry.error):
            entry.reason, entry.error = reason, error
            entry.save(update_fields=["reason", "error"])
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
