"""The one tokenizer every keyword backend matches on.

lowercase → NFD → drop combining marks → split on every character that is neither a
letter nor a number. No stemming and no stopwords: ``prefer`` does not match
``prefers``, and ``the`` matches every record containing it. This yields the same
match set as SQLite FTS5's ``unicode61 remove_diacritics 2`` for Latin-script text,
which is what the conformance kit pins.
"""

from __future__ import annotations

import re
import unicodedata

# unicode61's default token categories: letters, numbers and private use ("L* N* Co").
# Python's \w is not used: it also admits the underscore and connector punctuation.
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
# the combining diacritics of Latin text; other combining marks take the general path
_LATIN_MARKS = {code: None for code in range(0x300, 0x370)}


def _is_token_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Co"


def _tokenize_general(folded: str) -> list[str]:
    tokens: list[str] = []
    current: list[str] = []
    for ch in folded:
        if unicodedata.combining(ch):
            continue
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return tokens


def tokenize(text: str) -> list[str]:
    """Split ``text`` into match tokens, in order, duplicates kept."""
    lowered = text.lower()
    if lowered.isascii():  # the common case, at regex speed
        return _ASCII_TOKEN.findall(lowered)
    folded = unicodedata.normalize("NFD", lowered)
    stripped = folded.translate(_LATIN_MARKS)
    if stripped.isascii():
        return _ASCII_TOKEN.findall(stripped)
    return _tokenize_general(folded)


def unique_tokens(text: str) -> list[str]:
    """The distinct tokens of ``text`` in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))
