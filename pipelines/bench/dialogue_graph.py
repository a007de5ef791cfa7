"""What the dialogue reader makes of a conversational dataset (LoCoMo's shape), without a database.

Every turn of the chosen split's conversations is extracted in this process, as the entity graph
step would: speaker from the passage, addressee the other speaker of a two-person conversation,
session day from `observed_at`; and, side by side in the same run, as the page reading reads the
same turns without a speaker (what the graph held before turns had one). Printed: the share of
turns that name an entity other than their speaker, entities by kind, the greeting, thanks and
backchannel turns and sentences that still made a fact or an entity (should be none), time per
turn, and a seeded sample of the dialogue reading's entities and facts.

    python -m pipelines.bench.dialogue_graph --dataset ../shared/data/locomo.json --split dev
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from pipelines.write.extraction.dialogue import turn_body
from pipelines.write.extraction.grounding import split_sentences
from pipelines.write.extraction.extraction_model import ChunkExtraction, ChunkText, ExtractedFact
from pipelines.write.extraction.spacy_extractor import SpacyExtractor

# A social turn, judged apart from the reader: every sentence a few words opening with a
# greeting, thanks or backchannel word ("Hey Mel!", "Thanks, Caroline!", "Cool", "Bye!").
SOCIAL_SENTENCE = re.compile(
    r"^(?:hey|hi|hello|thanks|thank you|thx|bye|goodbye|cool|wow|alright|all right|ok|okay|yeah|yep|"
    r"sure|awesome|great|congrats|congratulations|nice|haha|lol|oh|aw+|take care|see you|talk soon)\b"
    r"(?:\W+(?!(?:i|i'm|we|my|our)\b)\w+){0,4}\W*$",
    re.IGNORECASE,
)


def dialogue_turns(dataset: dict, split: str) -> list[ChunkText]:
    """The split's turns as the entity graph step reads them: conversations whose questions are
    in `split` ("train"; "dev" is everything else; "all" every conversation)."""
    splits: dict[str, set[str]] = defaultdict(set)
    for query in dataset["queries"]:
        meta = query.get("meta", {})
        splits[meta.get("conversation", "")].add("train" if meta.get("split") == "train" else "dev")
    speakers: dict[str, set[str]] = defaultdict(set)
    for passage in dataset["corpus"]:
        speakers[passage["conversation"]].add(passage["speaker"])
    turns = []
    for passage in dataset["corpus"]:
        conversation = passage["conversation"]
        if split != "all" and split not in splits.get(conversation, set()):
            continue
        others = speakers[conversation] - {passage["speaker"]}
        turns.append(
            ChunkText(
                passage["id"], passage["text"], speaker=passage["speaker"],
                addressee=next(iter(others)) if len(others) == 1 else "",
                observed_at=datetime.fromisoformat(passage["observed_at"]).date(),
            )
        )
    return turns


def social_sentences(turn: ChunkText) -> tuple[list[str], bool]:
    """The turn's social sentences, and whether it has nothing else."""
    sentences = split_sentences(turn_body(turn))
    social = [s for s in sentences if SOCIAL_SENTENCE.match(s)]
    return social, bool(sentences) and len(social) == len(sentences)


@dataclass
class Reading:
    """What one reading of the turns made, and how long it took."""

    turns: list[ChunkText]
    extractions: list[ChunkExtraction]
    seconds: float

    @property
    def facts(self) -> list[ExtractedFact]:
        return [fact for extraction in self.extractions for fact in extraction.facts]

    def entities(self) -> dict[str, set[str]]:
        by_kind: dict[str, set[str]] = defaultdict(set)
        for extraction in self.extractions:
            for mention in extraction.mentions:
                by_kind[mention.kind].add(mention.normalized_name)
        return by_kind

    def figures(self) -> dict[str, str]:
        naming = social = social_with_facts = social_with_entities = 0
        social_statements: set[str] = set()
        for turn, extraction in zip(self.turns, self.extractions, strict=True):
            others = [m for m in extraction.mentions if m.normalized_name != turn.speaker.lower()]
            naming += bool(others)
            sentences, only_social = social_sentences(turn)
            social_statements.update(sentences)
            if only_social:
                social += 1
                social_with_facts += bool(extraction.facts)
                social_with_entities += bool(others)
        by_kind = self.entities()
        facts = self.facts
        return {
            "turns naming an entity other than their speaker": f"{naming / max(len(self.turns), 1):.1%}",
            "entities": str(sum(len(names) for names in by_kind.values())),
            **{f"  {kind}": str(len(names)) for kind, names in sorted(by_kind.items())},
            "facts": str(len(facts)),
            f"social turns ({social}) with a fact": f"{social_with_facts / max(social, 1):.1%}",
            f"social turns ({social}) with an entity": f"{social_with_entities / max(social, 1):.1%}",
            f"social sentences ({len(social_statements)}) stating a fact": str(
                len(social_statements & {fact.statement for fact in facts})
            ),
            "ms/turn (one process)": f"{1000 * self.seconds / max(len(self.turns), 1):.1f}",
        }


def read(extractor: SpacyExtractor, turns: list[ChunkText]) -> Reading:
    started = time.perf_counter()
    extractions = extractor.extract(turns)
    return Reading(turns, extractions, time.perf_counter() - started)


def report(dialogue: Reading, pages: Reading, samples: int) -> str:
    """The dialogue reading beside the page reading of the same turns, then samples of the former."""
    ours, theirs = dialogue.figures(), pages.figures()
    width = max(map(len, [*ours, *theirs]))
    lines = [f"{'':<{width}}  {'dialogue':>10}  {'as pages':>10}"]
    lines += [f"{name:<{width}}  {ours.get(name, '-'):>10}  {theirs.get(name, '-'):>10}" for name in dict.fromkeys([*ours, *theirs])]
    predicates = Counter(fact.predicate for fact in dialogue.facts)
    lines.append("top predicates: " + ", ".join(f"{p} {n}" for p, n in predicates.most_common(12)))
    rng = random.Random(0)
    entities = sorted((kind, name) for kind, names in dialogue.entities().items() for name in names)
    lines.append("sample entities:")
    lines += [f"  {kind:<12} {name}" for kind, name in rng.sample(entities, min(samples, len(entities)))]
    lines.append("sample facts (subject | predicate | object | valid from | statement):")
    for fact in rng.sample(dialogue.facts, min(samples, len(dialogue.facts))):
        target = fact.object.name if fact.object else repr(fact.object_value)
        lines.append(f"  {fact.subject.name} | {fact.predicate} | {target} | {fact.valid_from} | {fact.statement}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True, help="a dataset JSON with conversational passages")
    parser.add_argument("--split", choices=["train", "dev", "all"], default="dev")
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args(argv)
    turns = dialogue_turns(json.loads(args.dataset.read_text()), args.split)
    as_pages = [replace(turn, speaker="", addressee="", observed_at=None) for turn in turns]
    extractor = SpacyExtractor(workers=1)
    extractor.extract(turns[:8])  # load the model outside the timing
    print(report(read(extractor, turns), read(extractor, as_pages), args.samples))


if __name__ == "__main__":
    main()
