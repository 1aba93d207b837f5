"""Whole sessions as records: does search by meaning hold on records longer than the
model reads at once?

    python -m bench.sessions ../shared/datasets/locomo/locomo-dev.json \\
        [--out docs/benchmarks/locomo-sessions.md]

Each LoCoMo session — every turn of it as it was said, one per line, a few thousand
characters — is written as one record in its conversation's scope, citing every dialog
id of the session (the "whole-session units" of benchmarks that store one record per
session). Every question of categories 1-4 is searched in its own scope, and recall@k
is the share of its evidence ids covered by the top k records' (k = 3, 5, 10 of about
25 records a scope: 5 is about a fifth of a scope, what 10 is of a fifty-session one).

A session runs to 600-1,000 tokens, and the default model reads 256 at once. Two stores
over the same records (SQLite files, as users run the store), in the same run: the
store as shipped, whose embedder reads a long text whole in windows
(:meth:`~memory_admin.embed.local.OnnxEmbedder._windows`), and the baseline, the same
model reading each text's first window alone (what truncation gives). Each is measured
by keyword, semantic, hybrid and quality search, and by the plain cosine of its own
vectors (the untuned baseline of search by meaning), with the time its ingest took.
Semantic search is also measured with its relevance floor off: the floor leaves out
records whose cosine is under it, where the plain cosine ranks every record.
Vectors are embedded in the run: no cache.

A record read in several windows keeps a vector per window beside its own, and its
similarity to a query mixes in its best window's (``tuning.WINDOW_WEIGHT``). The store
is measured at each weight of ``--weights`` (and at 0, the record's own vector alone),
and the weight is chosen out of fold: each conversation's picked on the others, by the
sum of semantic and hybrid search's recall@5 over their questions, and measured on it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.locomo import Dataset, StoreRun, load_dataset
from bench.measure import command, scratch, sqlite_url, tuned, write_report
from memory_admin import tuning
from memory_admin.embed import OnnxEmbedder, default_embedder
from memory_admin.embed.protocol import Side, numpy
from memory_admin.store import open_store

KS = (3, 5, 10)
MAIN_K = 5
"""The cut the per-conversation table and the check are read at."""
RETRIEVERS = ("keyword", "plain cosine", "semantic", "semantic, no floor", "hybrid", "quality")
UNFLOORED = "semantic, no floor"
"""Semantic search with the relevance floor off: every record ranked, as the plain cosine ranks."""
WEIGHTS = (0.25, 0.5, 0.75, 1.0)
"""The best window's weights tried beside 0 (the record's own vector alone) and the store's."""
PICKED_BY = ("semantic", "hybrid")
"""The searches whose recall@``MAIN_K`` picks a fold's weight (both use it)."""
WEIGHED = ("semantic", "hybrid", "quality")


class FirstWindow(OnnxEmbedder):
    """The default model reading a text's first window alone (truncation): the baseline."""

    def _windows(self, text: str, side: Side) -> list[list[int]]:
        first: list[int] = self._tokenizer.encode(text).ids
        return [first]


def first_window() -> FirstWindow:
    model = default_embedder()
    return FirstWindow(
        model._model_path,
        model._tokenizer_path,
        model_id=model.model_id,
        dimensions=model.dimensions,
        graph=model._graph,
    )


@dataclass
class Measured:
    """One store's figures: recall@k per retriever, per conversation (each question's share)."""

    label: str
    recall: dict[tuple[str, int], dict[str, list[float]]] = field(default_factory=dict)
    ingest_seconds: float = 0.0

    def at(self, retriever: str, k: int, conversation: str | None = None) -> float:
        by = self.recall[retriever, k]
        return self.over(retriever, k, [conversation] if conversation else list(by))

    def over(self, retriever: str, k: int, conversations: Sequence[str]) -> float:
        """The mean over these conversations' questions."""
        by = self.recall[retriever, k]
        return statistics.fmean(v for c in conversations for v in by[c])


def picks(conversations: Sequence[str], by_weight: dict[float, Measured]) -> dict[str, float]:
    """Each conversation's weight, picked on the others: the highest sum of
    :data:`PICKED_BY`'s recall@``MAIN_K`` over their questions (a tie to the smaller)."""
    chosen = {}
    for held in conversations:
        others = [c for c in conversations if c != held]
        chosen[held] = max(
            sorted(by_weight),
            key=lambda w: (sum(by_weight[w].over(r, MAIN_K, others) for r in PICKED_BY), -w),
        )
    return chosen


def out_of_fold(by_weight: dict[float, Measured], chosen: dict[str, float], retriever: str, k: int) -> float:
    """Recall@k with each conversation's questions searched at the weight picked on the others."""
    return statistics.fmean(v for c, w in chosen.items() for v in by_weight[w].recall[retriever, k][c])


def measure(dataset: Dataset, embedder: OnnxEmbedder, label: str) -> Measured:
    np = numpy()
    embedder.load()
    out = Measured(label)
    with scratch("sessions-") as folder, open_store(sqlite_url(folder), embedder=embedder) as store:
        started = time.perf_counter()
        run = StoreRun(store, dataset, "sessions", "hybrid")
        out.ingest_seconds = time.perf_counter() - started
        ids: dict[str, list[str]] = {}
        for key, (conversation, _) in run.owner.items():
            ids.setdefault(conversation, []).append(key)
        texts = dict(zip(run.owner, (r.text for r in dataset.observations), strict=True))  # written in order
        vectors = {c: np.asarray(embedder.embed_documents([texts[k] for k in keys])) for c, keys in ids.items()}
        for question in dataset.questions:
            keys = ids[question.conversation]
            cosines = vectors[question.conversation] @ embedder.embed_query(question.text)
            ranked = {"plain cosine": [keys[i] for i in np.argsort(-cosines, kind="stable")]}
            for mode in ("keyword", "semantic", "hybrid", "quality"):
                query = run.query(question.conversation, question.text, max(KS), mode)
                ranked[mode] = [hit.record.id for hit in store.search(query)]
            with tuned(RELEVANCE_FLOOR=None):
                query = run.query(question.conversation, question.text, max(KS), "semantic")
                ranked[UNFLOORED] = [hit.record.id for hit in store.search(query)]
            for retriever, order in ranked.items():
                for k in KS:
                    cited = set().union(*(run.owner[key][1] for key in order[:k]))
                    share = len(question.evidence & cited) / len(question.evidence)
                    out.recall.setdefault((retriever, k), {}).setdefault(question.conversation, []).append(share)
    return out


def windows(dataset: Dataset, embedder: OnnxEmbedder) -> int:
    """Model runs the records take read whole (a record within one window takes one)."""
    embedder.load()
    return sum(len(embedder._windows(r.text, "document")) for r in dataset.observations)


def report(dataset: Dataset, by_weight: dict[float, Measured], baseline: Measured, runs: int, command_line: str) -> str:
    shipped = by_weight[tuning.WINDOW_WEIGHT]
    chars = [len(r.text) for r in dataset.observations]
    lines = [
        "# Whole sessions as records",
        "",
        f"Command: `{command_line}`",
        "",
        f"{len(dataset.conversations)} conversations, {len(dataset.observations)} sessions written as records "
        f"(one scope per conversation, {min(chars)}-{max(chars)} characters, "
        f"{statistics.fmean(chars):.0f} on average), "
        f"{len(dataset.questions)} questions of categories 1-4. The default model reads 256 tokens at once: the "
        f"{len(dataset.observations)} records take {runs} windows read whole, one each read first-window-only. "
        "recall@k: the share of a question's evidence ids the top k records cite.",
        "",
        f"| | {shipped.label} | {baseline.label} | difference |",
        "| --- | ---: | ---: | ---: |",
    ]
    for k in KS:
        for retriever in RETRIEVERS:
            a, b = shipped.at(retriever, k), baseline.at(retriever, k)
            lines.append(f"| recall@{k}, {retriever} | {a:.4f} | {b:.4f} | {a - b:+.4f} |")
    lines.append(
        f"| ingest (s, embedding included) | {shipped.ingest_seconds:.2f} | {baseline.ingest_seconds:.2f} | "
        f"{shipped.ingest_seconds / baseline.ingest_seconds:.2f}× |"
    )
    for measured in (shipped, baseline):
        lines += ["", f"recall@{MAIN_K} by conversation, {measured.label}:", ""]
        lines.append("| | " + " | ".join(dataset.conversations) + " | all |")
        lines.append("| --- |" + " ---: |" * (len(dataset.conversations) + 1))
        for retriever in RETRIEVERS:
            cells = [f"{measured.at(retriever, MAIN_K, c):.4f}" for c in dataset.conversations]
            lines.append(f"| {retriever} | " + " | ".join(cells) + f" | {measured.at(retriever, MAIN_K):.4f} |")
    lines += ["", semantic_check(dataset, shipped), "", *windows_section(dataset, by_weight), ""]
    return "\n".join(lines)


def windows_section(dataset: Dataset, by_weight: dict[float, Measured]) -> list[str]:
    """The best window's weight: every weight's figures, and the weight chosen out of fold."""
    lines = [
        "## The best window's weight, out of fold",
        "",
        "A record read in several windows keeps a vector per window beside its own; its similarity to a query "
        "is (1 - w) × its own vector's + w × its best window's (`tuning.WINDOW_WEIGHT`, "
        f"{tuning.WINDOW_WEIGHT:g} in the store). Every weight, over every question:",
        "",
        "| w | " + " | ".join(f"{r} @{k}" for r in WEIGHED for k in KS) + " |",
        "| ---: |" + " ---: |" * (len(WEIGHED) * len(KS)),
    ]
    for w, measured in sorted(by_weight.items()):
        lines.append(f"| {w:g} | " + " | ".join(f"{measured.at(r, k):.4f}" for r in WEIGHED for k in KS) + " |")
    if len(dataset.conversations) < 2:
        return [*lines, "", "Folds need two conversations or more: the weight is not chosen here."]
    chosen = picks(dataset.conversations, by_weight)
    lines += [
        "",
        "Each conversation's weight picked on the others (the highest sum of "
        + " and ".join(PICKED_BY)
        + f" search's recall@{MAIN_K} over their questions), and measured on it: "
        + ", ".join(f"{c} {w:g}" for c, w in chosen.items())
        + ".",
        "",
        "| | out of fold | own vector alone (w = 0) | difference |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in WEIGHED:
        for k in KS:
            a, b = out_of_fold(by_weight, chosen, r, k), by_weight[0.0].at(r, k)
            lines.append(f"| recall@{k}, {r} | {a:.4f} | {b:.4f} | {a - b:+.4f} |")
    return lines


def semantic_check(dataset: Dataset, measured: Measured) -> str:
    """Where semantic search falls below the plain cosine, conversation by conversation, at each cut."""
    below = [
        f"{c} at @{k} ({measured.at('semantic', k, c):.4f} against {measured.at('plain cosine', k, c):.4f})"
        for k in KS
        for c in dataset.conversations
        if measured.at("semantic", k, c) < measured.at("plain cosine", k, c) - 1e-9
    ]
    if not below:
        return f"Semantic search against the plain cosine, {measured.label}: at least as high on every conversation."
    return f"Semantic search against the plain cosine, {measured.label}: below it on " + "; ".join(below) + "."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sessions", description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="LoCoMo JSON (e.g. ../shared/datasets/locomo/locomo-dev.json)")
    parser.add_argument("--out", type=Path, help="also write the report (Markdown) to this file")
    parser.add_argument(
        "--weights",
        type=float,
        nargs="+",
        default=WEIGHTS,
        help="the best window's weights tried, beside 0 and the store's (default: %(default)s)",
    )
    options = parser.parse_args(argv)
    dataset = load_dataset(options.dataset, "sessions")
    model = default_embedder()
    by_weight = {}
    for weight in sorted({0.0, tuning.WINDOW_WEIGHT, *options.weights}):
        with tuned(WINDOW_WEIGHT=weight):
            by_weight[weight] = measure(dataset, model, f"the store, w = {weight:g}")
    by_weight[tuning.WINDOW_WEIGHT].label = "the store (read whole, in windows)"
    baseline = measure(dataset, first_window(), "first window only")
    text = report(dataset, by_weight, baseline, windows(dataset, model), command("bench.sessions", argv))
    print(text, end="")
    write_report(options.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
