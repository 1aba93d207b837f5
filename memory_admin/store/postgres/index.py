"""What PostgreSQL's full-text index holds: the text of a record's ``tsvector`` (its terms,
lexeme by lexeme, and its hidden lexemes) and of the ``tsquery`` expressions that match it.

Full-text search matches exactly what SQLite and the in-memory store match: each
record's ``tsvector`` is built from the terms of its
:func:`~memory_admin.store.ranking.record_text` (the server's parser never re-splits
them), and a query is the OR of its tokens. Each record also carries hidden lexemes — one
per scope pair, one for its whole scope, its kind, an agent marker — that start with
``:``, which no token can, so user text can never spell them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime

from memory_admin.scope import AGENT_KEY, scope_json
from memory_admin.store import ranking
from memory_admin.store.sql.rows import AGENT_MARK, pair_token

# PostgreSQL's own limits on a tsvector entry
_MAX_LEXEME_BYTES = 2047
_MAX_POSITION = 16383
_MAX_POSITIONS = 256

AGENT_LEXEME = ":" + AGENT_MARK


def pair_lexeme(key: str, value: str) -> str:
    return ":" + pair_token(key, value)


def pair_lexemes(scope: Mapping[str, str]) -> list[str]:
    """The lexemes a record must all hold to match ``scope`` as a subset filter."""
    return [pair_lexeme(key, value) for key, value in scope.items()]


def scope_lexeme(scope: Mapping[str, str]) -> str:
    return scope_text_lexeme(scope_json(scope))


def scope_text_lexeme(text: str) -> str:
    """The whole-scope lexeme of a scope given as its canonical JSON (as stored)."""
    return ":s" + hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def kind_lexeme(kind: str) -> str:
    return ":k" + kind


def scope_pair_lexemes(scope: Mapping[str, str]) -> list[str]:
    """The lexemes stored with a scope: its pairs, and the agent marker if it names one."""
    lexemes = [pair_lexeme(key, value) for key, value in sorted(scope.items())]
    if AGENT_KEY in scope:
        lexemes.append(AGENT_LEXEME)
    return lexemes


def lexeme(token: str) -> str:
    """A token as an index lexeme. PostgreSQL refuses lexemes over 2047 bytes; a longer
    token keeps its head and a digest of the whole, so equal tokens stay equal."""
    raw = token.encode()
    if len(raw) <= _MAX_LEXEME_BYTES:
        return token
    head = raw[:2000].decode(errors="ignore")
    return f"{head}#{hashlib.blake2b(raw, digest_size=8).hexdigest()}"


def quote(text: str) -> str:
    """A lexeme in tsvector/tsquery text: a quote is doubled, a backslash escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def all_of(lexemes: Iterable[str]) -> str:
    return "(" + " & ".join(quote(lex) for lex in lexemes) + ")"


def any_of(lexemes: Iterable[str]) -> str:
    return "(" + " | ".join(quote(lex) for lex in lexemes) + ")"


def document(content: str, tags: Iterable[str], stated: datetime, hidden: Iterable[str]) -> tuple[str, int]:
    """A record's tsvector text (its terms with positions, then the hidden lexemes) and
    its length in terms, for BM25."""
    tokens = ranking.record_tokens(content, tags, stated)
    positions: dict[str, list[int]] = {}
    for index, token in enumerate(tokens, start=1):
        kept = positions.setdefault(lexeme(token), [])
        position = min(index, _MAX_POSITION)
        if len(kept) < _MAX_POSITIONS and (not kept or kept[-1] != position):
            kept.append(position)
    parts = [f"{quote(lex)}:{','.join(map(str, where))}" for lex, where in positions.items()]
    parts += [quote(lex) for lex in hidden]
    return " ".join(parts), len(tokens)


__all__ = [
    "AGENT_LEXEME",
    "all_of",
    "any_of",
    "document",
    "kind_lexeme",
    "lexeme",
    "pair_lexeme",
    "pair_lexemes",
    "quote",
    "scope_lexeme",
    "scope_pair_lexemes",
    "scope_text_lexeme",
]
