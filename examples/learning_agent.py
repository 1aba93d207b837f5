"""An agent that learns, and no LLM: a learning goes from candidate to promoted to demoted.

Run it with ``python examples/learning_agent.py`` (a throwaway SQLite file), or point it
at a store: ``python examples/learning_agent.py --store sqlite:///var/memory.sqlite3``.

The agent is ``examples/support_agent.toml``. Each conversation, the host composes it
(its authored composition with the learnings promoted so far), assembles the turn-1
recall block, and runs the scripted "model" turns through the toolbox:

1. the model saves a lesson as a proposed heuristic for its ``triage`` judgment: a
   *candidate*, in the recall tier; the gates hold it (seen in one conversation of two);
2. in a second conversation the model learns the same; saving it again meets the
   conflict envelope, and it *corroborates* instead; the gates promote it (recurrence):
   the next composition carries it as a line of the prompt, traced to the record, and
   the recall block no longer quotes it;
3. the lesson turns out wrong: the model retires it (``memory_invalidate``); it is
   *demoted* and leaves the next composition. ``memory_learnings`` tells the story.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_admin import open_store
from memory_admin.composition import AgentComposition, load_composition
from memory_admin.learning import compose, promote_candidates
from memory_admin.recall import assemble_recall
from memory_admin.scope import parse_scope_text
from memory_admin.store import BaseMemoryStore
from memory_admin.toolbox import MemoryToolbox, dumps

COMPOSITION = Path(__file__).with_name("support_agent.toml")
LESSON = "Ask which region the customer's workspace is in before checking the status page."
TARGET = {"primitive": "judgment", "domain": "triage", "slot": "heuristics"}


@contextmanager
def opened_store(url: str | None) -> Iterator[BaseMemoryStore]:
    """The store at ``url``, or a SQLite file in a temporary directory removed afterwards."""
    if url is not None:
        with open_store(url, embedder="none") as store:
            yield store
        return
    with (
        tempfile.TemporaryDirectory(prefix="learning-example-") as folder,
        open_store(f"sqlite:///{Path(folder) / 'memory.sqlite3'}", embedder="none") as store,
    ):
        yield store


def say(who: str, text: str) -> None:
    print(f"  {who:>9}: {text}")


def call(toolbox: MemoryToolbox, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The host runs one of the model's tool calls and hands the JSON back."""
    result = toolbox.call(name, json.dumps(arguments))
    say("tool", f"{name}({json.dumps(arguments)}) -> {dumps(result)[:300]}")
    return result


def start(store: BaseMemoryStore, scope: dict[str, str], composition: AgentComposition, message: str) -> bool:
    """What a host does before the model's first turn: compose the agent, assemble recall.
    Returns whether the lesson is part of the agent's prompt."""
    composed = compose(store, scope, composition)
    learned = [line for line in composed.prompt.lines if line.source == "memory"]
    say("host", f"composed overlay {composed.version[:12]}: {len(learned)} learned line(s)")
    for line in learned:
        say("prompt", f"{line.text}   <- memory {', '.join(line.record_ids)}")
    recall = assemble_recall(store, scope, message)
    quoted = LESSON in recall.block
    say("host", f"recall block: {recall.report.count} memories; quotes the lesson: {quoted}")
    return any(LESSON in line.text for line in learned)


def gates(store: BaseMemoryStore, scope: dict[str, str], composition: AgentComposition) -> None:
    """What a host runs between conversations (or on a schedule): the promotion gates."""
    report = promote_candidates(store, scope, composition)
    for candidate in report.candidates:
        say("gates", f"{candidate.record_id} [{candidate.tier.value}] {candidate.outcome}: {candidate.reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="store URL (default: a throwaway SQLite file)")
    parser.add_argument("--scope", default="tenant=acme,user=dana", help="the conversation's scope")
    options = parser.parse_args(argv)
    scope = parse_scope_text(options.scope)
    composition = load_composition(COMPOSITION)
    with opened_store(options.store) as store:
        print("=== Conversation 1: a lesson is learnt, as a candidate")
        in_prompt = start(store, scope, composition, "The dashboard is down for us.")
        first = MemoryToolbox(store, scope, conversation_id="conv-1")
        saved = call(first, "memory_save", {"content": LESSON, "kind": "episode", "target": TARGET})
        lesson = saved["saved"]["id"]
        gates(store, scope, composition)

        print("=== Conversation 2: the same lesson again, corroborated; the gates promote it")
        start(store, scope, composition, "Our dashboard is down.")
        second = MemoryToolbox(store, scope, conversation_id="conv-2")
        conflict = call(second, "memory_save", {"content": LESSON, "kind": "episode", "target": TARGET})
        offered = [option["action"] for option in conflict["error"]["resolutions"]]
        say("model", f"the save conflicts; it is offered {offered} and corroborates")
        call(second, "memory_save", {"content": LESSON, "kind": "episode", "target": TARGET, "corroborates": lesson})
        gates(store, scope, composition)

        print("=== Conversation 3: the agent wakes up changed")
        promoted = start(store, scope, composition, "The dashboard is down again.")

        print("=== Conversation 4: the lesson was wrong; the agent retires it and it is demoted")
        third = MemoryToolbox(store, scope, conversation_id="conv-3")
        call(third, "memory_invalidate", {"id": lesson, "reason": "regions do not matter: the outage page covers all"})
        demoted = not start(store, scope, composition, "The dashboard is down once more.")
        learnt = call(third, "memory_learnings", {"changes": ["promoted", "demoted"]})
        story = [(item["change"], item.get("cause")) for item in learnt["results"]]
        say("host", f"memory_learnings: {story}")

    if in_prompt or not promoted or not demoted:
        print("The learning did not go candidate -> promoted -> demoted.", file=sys.stderr)
        return 1
    print("The learning went from candidate to promoted to demoted.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
