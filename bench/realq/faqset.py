"""The realq layout that a FAQ becomes (shared by build_debian.py, build_zsh.py and build_fetchmail.py; stdlib only).

A FAQ's sections ({"number", "heading", "body", "chapter", "intro"}) are written as:
- ``corpus/faq/<chapter>/entry-NNN.md``: each answer whose heading holds a '?', the answer text ONLY
  (the heading is the question; the file is named by position, so a retriever cannot win by matching it);
- ``corpus/docs/<chapter>/section-NNN.md``: the other sections (and introductions) as distractors;
- ``questions.jsonl``: {"id", "question", "gold_path", "page", "anchor"} (gold_path relative to corpus/);
- ``README.txt``: starting with the builder's marker (so a rebuild only ever replaces its own folder).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

MIN_ANSWER_WORDS = 15


def read_faq(path: Path) -> str:
    """The FAQ's text, gzipped (as Debian ships it) or plain."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    return path.read_text(encoding="utf-8")


def write_set(found: list[dict], out: Path, name: str, marker: str, source: Path, rule: str, distractors: str) -> dict:
    """Write the sections to ``out`` in the realq layout; question ids are ``<name>-<number>``. ``rule``
    and ``distractors`` say, in README.txt, which headings became questions and what the distractors are."""
    work = Path(tempfile.mkdtemp(prefix=f"realq-{name}-"))
    questions, counts = [], {"questions": 0, "distractors": 0, "short_answers": 0}
    for n, section in enumerate(found, 1):
        words = len(section["body"].split())
        chapter = f"chapter-{int(section['chapter']):02d}"
        if "?" in section["heading"] and not section["intro"]:
            if words < MIN_ANSWER_WORDS:
                counts["short_answers"] += 1
                continue
            rel = f"faq/{chapter}/entry-{n:03d}.md"
            questions.append({"id": f"{name}-{section['number']}", "question": section["heading"], "gold_path": rel,
                              "page": chapter, "anchor": section["number"]})
            counts["questions"] += 1
        elif words >= MIN_ANSWER_WORDS:
            rel = f"docs/{chapter}/section-{n:03d}.md"
            counts["distractors"] += 1
        else:
            continue
        path = work / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(section["body"] + "\n", encoding="utf-8")
    (work / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (work / "README.txt").write_text(
        f"{marker}\nsource: {source}\nquestions: {counts['questions']} ({rule}, answer of "
        f"{MIN_ANSWER_WORDS}+ words; {counts['short_answers']} shorter answers skipped)\n"
        f"distractors: {counts['distractors']} {distractors}\n"
        "answer files hold the answer text only, named by position (no question words in the indexed text)\n",
        encoding="utf-8")
    _swap_in(work, out, marker)
    return counts


def _swap_in(work: Path, out: Path, marker: str) -> None:
    """Replace ``out`` with the built folder, only when ``out`` is absent or one of ours."""
    if out.exists():
        readme = out / "README.txt"
        if not readme.is_file() or not readme.read_text(encoding="utf-8").startswith(marker):
            shutil.rmtree(work)
            raise SystemExit(f"{out} exists and was not built by this script: pick another --out")
        shutil.rmtree(out)
    shutil.move(str(work), str(out))


def main(argv, description: str, build, default_faq: Path, default_out: Path, how_to_get: str) -> int:
    """A builder's command line: ``--faq`` (``how_to_get`` says where it comes from when missing) and ``--out``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--faq", type=Path, default=default_faq)
    args = parser.parse_args(argv)
    if not args.faq.is_file():
        print(f"{args.faq} not found: {how_to_get}", file=sys.stderr)
        return 1
    counts = build(args.faq, args.out)
    print(f"wrote {args.out}\nquestions: {counts['questions']} (skipped {counts['short_answers']} short answers)\n"
          f"distractors: {counts['distractors']}")
    return 0
