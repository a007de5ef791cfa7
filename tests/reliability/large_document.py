"""A 2 MB prose document through `lanegraph ingest`, then a small one, with the peak memory of the
command's process tree: `python -m tests.reliability.large_document FOLDER`.

The issue's bound: a 2 MB document ingests within 2 GB of memory, or is refused by name while later
ingests still work. The document is generated (deterministic prose about people, projects and places,
so extraction and every graph step have work); each ingest is a real `lanegraph ingest` subprocess
whose resident set, and its children's, is sampled from /proc every 50 ms. Exit status 0 when both
ingests succeed and the peak stays under the bound; docs/reliability.md gives a run's figures.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

MEGABYTE = 1 << 20
BOUND_BYTES = 2048 * MEGABYTE
PEOPLE = [f"{first} {last}" for first in ("Aino", "Mara", "Otto", "Liisa", "Jonas", "Priya", "Tomas", "Ines")
          for last in ("Okafor", "Virtanen", "Lindqvist", "Moreau", "Tanaka", "Costa")]
PROJECTS = ["Project Heron", "Project Lantern", "Project Mooring", "Project Tessel", "Project Quill", "Project Ember"]
PLACES = ["Rotterdam", "Porto", "Tampere", "Lyon", "Gdansk", "Bilbao", "Aarhus", "Riga"]
ORGANISATIONS = ["Corvane Logistics", "Northwind Freight", "Halden Batteries", "Skylark Drones", "Baltic Survey"]
PATTERNS = [
    "{person} leads {project} from the {place} office.",
    "{person} works with {other} on the {project} release.",
    "{organisation} supplies batteries to {project} through its {place} depot.",
    "In {year}, {person} moved from {place} to join {organisation}.",
    "The {place} review of {project} found {count} open issues, which {person} owns.",
    "{other} reports to {person} on the safety audit of {organisation}.",
    "{project} shipped its {count}th route over {place} after {person} signed it off.",
]


def prose(target_bytes: int, seed: int = 0) -> str:
    """Paragraphs of generated sentences, in sections, until `target_bytes` of UTF-8."""
    chooser = random.Random(seed)
    parts = ["# The operations archive\n\n"]
    size = len(parts[0])
    section = 0
    while size < target_bytes:
        if section % 40 == 0:
            parts.append(f"## Part {section // 40 + 1}\n\n")
        sentences = [
            chooser.choice(PATTERNS).format(
                person=chooser.choice(PEOPLE), other=chooser.choice(PEOPLE), project=chooser.choice(PROJECTS),
                place=chooser.choice(PLACES), organisation=chooser.choice(ORGANISATIONS),
                year=chooser.randint(2015, 2026), count=chooser.randint(2, 90),
            )
            for _ in range(chooser.randint(4, 9))
        ]
        paragraph = " ".join(sentences) + "\n\n"
        parts.append(paragraph)
        size += len(paragraph.encode())
        section += 1
    return "".join(parts)


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and every process descended from it."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * 4096
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


def ingest_with_peak(path: Path) -> tuple[int, int, float, str]:
    """`lanegraph ingest PATH`: exit status, peak resident bytes of its process tree, seconds, stderr tail."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "ingest", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.05)
    error = process.stderr.read() if process.stderr else ""
    return process.returncode, peak, time.monotonic() - started, "\n".join(error.strip().splitlines()[-3:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a scratch folder for the two documents")
    parser.add_argument("--megabytes", type=float, default=2.0)
    arguments = parser.parse_args()
    large, small = arguments.folder / "large", arguments.folder / "small"
    large.mkdir(parents=True, exist_ok=True)
    small.mkdir(parents=True, exist_ok=True)
    (large / "archive.md").write_text(prose(int(arguments.megabytes * 1_000_000)))
    (small / "note.md").write_text("# Dock note\n\nMara Okafor schedules the Rotterdam dock slots weekly.\n")
    failed = False
    for path in (large, small):
        code, peak, seconds, error = ingest_with_peak(path)
        print(f"{path.name}: exit {code}, peak RSS {peak / MEGABYTE:,.0f} MB, {seconds:,.0f} s" + (f"\n{error}" if code else ""))
        failed |= code != 0 or peak > BOUND_BYTES
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
