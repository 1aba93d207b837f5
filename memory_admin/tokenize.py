"""The one tokenizer every keyword backend matches on.

A text's *words*: lowercase → NFD → drop combining marks → split on every character
that is neither a letter nor a number (the same split as SQLite FTS5's ``unicode61
remove_diacritics 2`` for Latin-script text). Its *match terms* (:func:`tokenize`): each
word reduced to its stem by the Snowball English stemmer, so ``prefers``, ``preferred``
and ``preferring`` all match ``prefer``. No stopwords: ``the`` matches every record
containing it (BM25 weighs it near zero). Every backend indexes and queries these terms,
computed here in Python, which is what the conformance kit pins.

Words that are not English pass through mostly unchanged (the stemmer only strips
English suffixes); a stemmer upgrade can change a few stems, so :data:`TERMS_IDENTITY`
names the stemmer and an index built under another one is rebuilt.
"""

from __future__ import annotations

import re
import unicodedata

import Stemmer

# unicode61's default token categories: letters, numbers and private use ("L* N* Co").
# Python's \w is not used: it also admits the underscore and connector punctuation.
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")
# the combining diacritics of Latin text; other combining marks take the general path
_LATIN_MARKS = {code: None for code in range(0x300, 0x370)}

STEM_CACHE_SIZE = 200_000
"""Distinct words whose stems are kept; past it the cache starts over."""

TERMS_IDENTITY = f"snowball-english PyStemmer-{Stemmer.version()} unicode-{unicodedata.unidata_version}"
"""What decides a text's match terms: an index built under another identity is stale."""


class _Stems(dict[str, str]):
    """word → stem, filled on a miss. A dict lookup costs a tenth of a call into the
    stemmer, and a corpus repeats a small vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self._stem = Stemmer.Stemmer("english").stemWord

    def __missing__(self, word: str) -> str:
        stem: str = self._stem(word)
        if len(self) >= STEM_CACHE_SIZE:
            self.clear()
        self[word] = stem
        return stem


_STEMS = _Stems()


def _is_token_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Co"


def _words_general(folded: str) -> list[str]:
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


def words(text: str) -> list[str]:
    """Split ``text`` into its folded words, in order, duplicates kept (no stemming)."""
    lowered = text.lower()
    if lowered.isascii():  # the common case, at regex speed
        return _ASCII_TOKEN.findall(lowered)
    folded = unicodedata.normalize("NFD", lowered)
    stripped = folded.translate(_LATIN_MARKS)
    if stripped.isascii():
        return _ASCII_TOKEN.findall(stripped)
    return _words_general(folded)


def stem(word: str) -> str:
    """The match term of one word of :func:`words`."""
    return _STEMS[word]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into match terms (stemmed words), in order, duplicates kept."""
    return list(map(_STEMS.__getitem__, words(text)))


def unique_tokens(text: str) -> list[str]:
    """The distinct match terms of ``text`` in first-seen order."""
    return list(dict.fromkeys(tokenize(text)))


def unique_words(text: str) -> list[str]:
    """The distinct words of ``text`` (unstemmed) in first-seen order."""
    return list(dict.fromkeys(words(text)))


__all__ = ["STEM_CACHE_SIZE", "TERMS_IDENTITY", "stem", "tokenize", "unique_tokens", "unique_words", "words"]
