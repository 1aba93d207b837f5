"""Canonical scopes and the rules for matching them.

A scope is a flat ``dict[str, str]`` such as ``{"tenant": "acme", "user": "u_42"}``.
It always holds a non-blank ``tenant`` (there is no default tenant: a default is one
typo away from every tenant), keys look like identifiers, values are trimmed and
bounded, and it is stored with sorted keys so equal scopes are equal strings.

Two ways a filter matches a record's scope:

``subset``
    the record's scope contains every pair of the filter. ``{tenant: acme}`` finds
    tenant-wide records and every user's records in that tenant.
``visible``
    every pair of the record's scope is in the viewer's scope: "shared and mine,
    never theirs". ``{tenant: acme, user: u1}`` sees ``{tenant: acme}`` records and
    u1's, not u2's.

The reserved ``agent`` key partitions memory between agents: a record is visible to
agent ``me`` when its scope has no ``agent`` key or ``agent == me``.

This module is the one home of those rules: the predicates (:func:`is_subset_match`,
:func:`is_visible_match`, :func:`visible_to_agent`), the scopes a visible-match viewer
sees (:func:`visible_scopes`, which the SQL backends turn into their index lookups) and
the read view of an agent bound to a scope (:func:`read_view`, recall's and the
toolbox's).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from itertools import combinations
from typing import Literal

from memory_admin.errors import MemoryValidationError

Scope = dict[str, str]
ScopeMatch = Literal["subset", "visible"]

TENANT_KEY = "tenant"
AGENT_KEY = "agent"
MAX_SCOPE_PAIRS = 16
MAX_SCOPE_KEY_CHARS = 64
MAX_SCOPE_VALUE_CHARS = 200
VISIBLE_ENUMERATION_LIMIT = 12
"""Pairs a visible-match viewer may hold: 2^11 scopes it can see at most."""

_KEY_PATTERN = re.compile(r"[a-z][a-z0-9_]*")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def has_control_chars(text: str, *, allow_layout: bool = False) -> bool:
    """True if ``text`` holds control characters (Unicode Cc) or lone surrogates.
    ``allow_layout`` admits newline and tab."""
    return (_CONTROL_BUT_LAYOUT if allow_layout else _CONTROL).search(text) is not None


def _has_control_chars(text: str) -> bool:
    # scope values are identifiers: invisible format characters (Cf) are refused too
    return has_control_chars(text) or any(unicodedata.category(ch) == "Cf" for ch in text)


def scope_problems(scope: object, *, loc: str = "scope") -> list[dict[str, str]]:
    """Every way ``scope`` breaks the scope rules, as ``{"loc", "msg"}`` entries."""
    if not isinstance(scope, Mapping):
        return [{"loc": loc, "msg": "a scope is a mapping of key to value"}]
    problems: list[dict[str, str]] = []
    if len(scope) > MAX_SCOPE_PAIRS:
        problems.append({"loc": loc, "msg": f"at most {MAX_SCOPE_PAIRS} scope pairs"})
    for key, value in scope.items():
        where = f"{loc}.{key}"
        if not isinstance(key, str) or not _KEY_PATTERN.fullmatch(key):
            problems.append({"loc": where, "msg": "scope keys look like [a-z][a-z0-9_]* (e.g. tenant, user)"})
        elif len(key) > MAX_SCOPE_KEY_CHARS:
            problems.append({"loc": where, "msg": f"scope keys hold at most {MAX_SCOPE_KEY_CHARS} characters"})
        if not isinstance(value, str):
            problems.append({"loc": where, "msg": "scope values are strings"})
            continue
        trimmed = value.strip()
        if not trimmed:
            problems.append({"loc": where, "msg": "scope values must not be blank"})
        elif len(trimmed) > MAX_SCOPE_VALUE_CHARS:
            problems.append({"loc": where, "msg": f"scope values hold at most {MAX_SCOPE_VALUE_CHARS} characters"})
        elif _has_control_chars(trimmed):
            problems.append({"loc": where, "msg": "scope values must not contain control characters"})
    tenant = scope.get(TENANT_KEY)
    if not (isinstance(tenant, str) and tenant.strip()):
        problems.append(
            {"loc": f"{loc}.{TENANT_KEY}", "msg": "every scope needs a non-blank tenant; there is no default"}
        )
    return problems


_CANONICAL_CACHE: dict[tuple[tuple[object, object], ...], Scope] = {}
_CANONICAL_CACHE_SIZE = 4096


def canonical_scope(scope: Mapping[str, str], *, loc: str = "scope") -> Scope:
    """Validate ``scope`` and return it trimmed, NFC-normalised, with sorted keys.

    Raises :class:`MemoryValidationError` listing every problem at once.
    """
    # batches repeat a few scopes many times; validating each distinct one once pays
    try:
        cache_key = tuple(scope.items())
        cached = _CANONICAL_CACHE.get(cache_key)
    except (TypeError, AttributeError):  # unhashable values, or not a mapping: validation below says why
        cache_key, cached = (), None
    if cached is not None:
        return dict(cached)
    problems = scope_problems(scope, loc=loc)
    if problems:
        raise MemoryValidationError(f"Invalid {loc}: " + "; ".join(p["msg"] for p in problems), problems)
    canonical = {key: unicodedata.normalize("NFC", scope[key].strip()) for key in sorted(scope)}
    if cache_key:
        if len(_CANONICAL_CACHE) >= _CANONICAL_CACHE_SIZE:
            _CANONICAL_CACHE.clear()
        _CANONICAL_CACHE[cache_key] = canonical
    return dict(canonical)


def scope_json(scope: Mapping[str, str]) -> str:
    """The canonical string form of a (canonical) scope, used as a storage key."""
    items = tuple(sorted(scope.items()))
    try:
        return _scope_json(items)
    except TypeError:  # unhashable values: not a scope to cache
        return json.dumps(dict(items), ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=4096)
def _scope_json(items: tuple[tuple[str, str], ...]) -> str:
    # every event and every batch names a few scopes many times over
    return json.dumps(dict(items), ensure_ascii=False, separators=(",", ":"))


_TEXT_ESCAPES = {"%": "%25", ",": "%2C", "=": "%3D"}
_TEXT_ESCAPED = re.compile("|".join(_TEXT_ESCAPES.values()), re.IGNORECASE)
_TEXT_UNESCAPES = {code.upper(): char for char, code in _TEXT_ESCAPES.items()}


def _escape_value(value: str) -> str:
    return "".join(_TEXT_ESCAPES.get(char, char) for char in value)


def _unescape_value(text: str) -> str:
    # one left-to-right pass, so "%252C" is the text "%2C", never a comma
    return _TEXT_ESCAPED.sub(lambda found: _TEXT_UNESCAPES[found.group(0).upper()], text)


def parse_scope_text(text: str) -> Scope:
    """Parse ``tenant=acme,user=u1`` (the dashboard's and the CLI's form) into a scope.

    In a value, ``%2C`` stands for ``,``, ``%3D`` for ``=`` and ``%25`` for ``%`` (what
    :func:`format_scope` writes); any other ``%`` is itself. The result is validated; a
    malformed pair raises :class:`MemoryValidationError`.
    """
    pairs: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise MemoryValidationError(
                f"Scope pair {part.strip()!r} needs the form key=value.",
                [{"loc": "scope", "msg": f"{part.strip()!r} is not key=value"}],
            )
        key = key.strip()
        if key in pairs:
            raise MemoryValidationError(
                f"Scope key {key!r} is given twice.", [{"loc": f"scope.{key}", "msg": "duplicate key"}]
            )
        pairs[key] = _unescape_value(value)
    return canonical_scope(pairs)


def format_scope(scope: Mapping[str, str]) -> str:
    """The text form of a scope, ``tenant=acme,user=u1``, whose exact inverse is
    :func:`parse_scope_text`: a value's ``,``, ``=`` and ``%`` are percent-escaped, so
    ``{user: "dana,"}`` is ``user=dana%2C`` and never Dana's own scope.

    The tenant comes first, then the other keys sorted (``tenant=acme,agent=planner,
    user=dana``): the order people read a scope in, from the widest pair down."""
    return ",".join(f"{key}={_escape_value(scope[key])}" for key in sorted(scope, key=_display_order))


def _display_order(key: str) -> tuple[bool, str]:
    return (key != TENANT_KEY, key)


def is_subset_match(record_scope: Mapping[str, str], scope_filter: Mapping[str, str]) -> bool:
    """True when the record's scope contains every pair of the filter."""
    return all(record_scope.get(key) == value for key, value in scope_filter.items())


def is_visible_match(record_scope: Mapping[str, str], viewer: Mapping[str, str]) -> bool:
    """True when every pair of the record's scope is in the viewer's scope."""
    return all(viewer.get(key) == value for key, value in record_scope.items())


def scope_matches(record_scope: Mapping[str, str], scope_filter: Mapping[str, str], mode: ScopeMatch) -> bool:
    if mode == "subset":
        return is_subset_match(record_scope, scope_filter)
    return is_visible_match(record_scope, scope_filter)


def visible_to_agent(record_scope: Mapping[str, str], agent: str | None) -> bool:
    """The agent convention: shared records (no ``agent`` key) and the agent's own."""
    if agent is None:
        return True
    owner = record_scope.get(AGENT_KEY)
    return owner is None or owner == agent


def visible_scopes(viewer: Mapping[str, str], agent: str | None) -> list[Scope]:
    """Every scope a viewer sees under visible match, canonical: the tenant plus any
    subset of the viewer's other pairs, the agent convention applied. A record is
    visible exactly when its scope is one of these (:func:`is_visible_match`)."""
    if len(viewer) > VISIBLE_ENUMERATION_LIMIT:
        raise MemoryValidationError(
            f"A visible-match scope holds at most {VISIBLE_ENUMERATION_LIMIT} pairs.",
            [{"loc": "scope", "msg": "too many pairs for visible match"}],
        )
    others = [key for key in viewer if key != TENANT_KEY]
    found = []
    for size in range(len(others) + 1):
        for keys in combinations(others, size):
            subset = {TENANT_KEY: viewer[TENANT_KEY], **{k: viewer[k] for k in keys}}
            if agent is None or subset.get(AGENT_KEY, agent) == agent:
                found.append(dict(sorted(subset.items())))
    return found


def read_view(scope: Mapping[str, str], agent: str | None, scope_match: ScopeMatch = "visible") -> Scope:
    """The scope filter a recall or toolbox read uses for ``scope`` and ``agent``.

    With visible match an agent's view includes its own ``agent=`` records, so the
    agent pair joins the viewer's scope; the store's ``agent`` filter then keeps other
    agents' records out inside the query. A scope that names a different agent than
    ``agent`` is a contradiction and refused.
    """
    canonical = canonical_scope(scope)
    owner = canonical.get(AGENT_KEY)
    if agent is not None and owner is not None and owner != agent:
        raise MemoryValidationError(
            f"The scope belongs to agent {owner!r} but the caller is agent {agent!r}; bind one of them.",
            [{"loc": "agent", "msg": "contradicts the scope's agent key"}],
        )
    if agent is not None and owner is None and scope_match == "visible":
        return canonical_scope({**canonical, AGENT_KEY: agent})
    return canonical
