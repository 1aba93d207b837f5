"""A synthetic, realistic-shaped memory corpus for benchmarks.

10 tenants × 1,000 users by default, activity skewed (a few users write most records,
as in real deployments), contents of 8–25 words drawn from a Zipf-distributed
vocabulary (a handful of words are everywhere, most are rare), a sprinkling of
agent-scoped and tenant-wide records, keyed preferences and tags. Deterministic for a
given seed, so two runs (and the store and its raw-SQL baseline) see the same data.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KINDS = ("fact", "fact", "fact", "fact", "preference", "preference", "episode", "episode", "profile", "fact")
TAGS = ("travel", "food", "billing", "deploys", "health", "it", "family", "work")
AGENTS = ("planner", "support", "coder")
_SYLLABLES = [a + b for a in "bcdfghjklmnprstvwz" for b in ("a", "e", "i", "o", "u", "ai", "ou", "ea")]


@dataclass(frozen=True)
class CorpusShape:
    tenants: int = 10
    users_per_tenant: int = 1000
    vocabulary: int = 20_000
    """Distinct words the contents and queries draw from."""
    zipf_s: float = 1.07
    """The words' Zipf exponent: how much more often the common words come up."""
    user_skew: float = 0.9
    """The users' activity exponent: how much more the busiest users write (and are searched)."""
    seed: int = 7


class Corpus:
    """Draws records, scopes and queries from one deterministic distribution."""

    def __init__(self, shape: CorpusShape = CorpusShape()) -> None:
        self.shape = shape
        rng = random.Random(shape.seed)
        words: set[str] = set()
        while len(words) < shape.vocabulary:
            words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
        self.words = sorted(words)
        rng.shuffle(self.words)
        self._word_cdf = list(itertools.accumulate(1 / (rank**shape.zipf_s) for rank in range(1, len(self.words) + 1)))
        self._user_cdf = list(
            itertools.accumulate(1 / (rank**shape.user_skew) for rank in range(1, shape.users_per_tenant + 1))
        )

    def _pick(self, rng: random.Random, cdf: list[float]) -> int:
        return bisect.bisect_left(cdf, rng.random() * cdf[-1])

    def word(self, rng: random.Random) -> str:
        return self.words[self._pick(rng, self._word_cdf)]

    def user(self, rng: random.Random) -> str:
        return f"u{self._pick(rng, self._user_cdf):04d}"

    def tenant(self, rng: random.Random) -> str:
        return f"t{rng.randrange(self.shape.tenants):02d}"

    def scope(self, rng: random.Random) -> dict[str, str]:
        tenant = self.tenant(rng)
        roll = rng.random()
        if roll < 0.05:
            return {"tenant": tenant}
        scope = {"tenant": tenant, "user": self.user(rng)}
        if roll > 0.9:
            scope["agent"] = rng.choice(AGENTS)
        return scope

    def sentence(self, rng: random.Random) -> str:
        words = [self.word(rng) for _ in range(rng.randint(8, 25))]
        return (" ".join(words) + ".").capitalize()

    def inputs(self, count: int, *, seed: int | None = None) -> Iterator[dict[str, Any]]:
        """``count`` write inputs (dicts), deterministic for ``seed``."""
        rng = random.Random(self.shape.seed if seed is None else seed)
        for index in range(count):
            kind = rng.choice(KINDS)
            item: dict[str, Any] = {
                "scope": self.scope(rng),
                "kind": kind,
                "content": self.sentence(rng),
                "provenance": {"source": "bench", "conversation_id": f"c{index // 20}"},
            }
            if rng.random() < 0.3:
                item["tags"] = rng.sample(TAGS, rng.randint(1, 2))
            if kind in ("preference", "profile") and rng.random() < 0.5:
                item["key"] = f"{kind}.{index}"  # unique: a bench ingest measures writes, not upserts
            yield item

    def query(self, rng: random.Random) -> str:
        """2–4 words, as an agent's first message would share with stored records."""
        return " ".join(self.word(rng) for _ in range(rng.randint(2, 4)))

    def active_user_scope(self, rng: random.Random) -> dict[str, str]:
        """A user scope weighted by activity, as searches follow writes."""
        return {"tenant": self.tenant(rng), "user": self.user(rng)}


def batched(items: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    while batch := list(itertools.islice(items, size)):
        yield batch
