"""BM25 relevance, shared by every backend that ranks in Python.

The formula is Okapi BM25 as SQLite FTS5 computes it (k1 = 1.2, b = 0.75, an idf
floor of 1e-6 for tokens in more than half the records), over the tokens of
:func:`~memory_admin.tokenize.tokenize` in a record's content and tags. Rare tokens weigh
more than common ones: a record matching the name a question is about outranks one
matching three of its stopwords.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from memory_admin.tokenize import tokenize

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6


def idf(documents: int, document_frequency: int) -> float:
    value = math.log((documents - document_frequency + 0.5) / (document_frequency + 0.5))
    return value if value > 0 else IDF_FLOOR


def record_terms(content: str, tags: Iterable[str]) -> Counter[str]:
    """The bag of tokens a record is matched and ranked on."""
    return Counter(tokenize(content + " " + " ".join(tags)))


def score(terms: Mapping[str, int], length: int, average_length: float, weights: Mapping[str, float]) -> float:
    """BM25 of one record (its token counts and length) for query tokens weighted by idf."""
    norm = K1 * (1 - B + B * length / (average_length or 1.0))
    total = 0.0
    for token, weight in weights.items():
        freq = terms.get(token, 0)
        if freq:
            total += weight * (freq * (K1 + 1)) / (freq + norm)
    return total


def upper_bound(weights: Iterable[float]) -> float:
    """No record scores more than this from these tokens, whatever their frequency."""
    return sum(weight * (K1 + 1) for weight in weights)


def score_text(text: str, average_length: float, weights: Mapping[str, float]) -> float:
    """BM25 of a text (a record's content and tags, space-joined) for these weights."""
    tokens = tokenize(text)
    norm = K1 * (1 - B + B * len(tokens) / (average_length or 1.0))
    total = 0.0
    for token, weight in weights.items():
        freq = tokens.count(token)
        if freq:
            total += weight * (freq * (K1 + 1)) / (freq + norm)
    return total
