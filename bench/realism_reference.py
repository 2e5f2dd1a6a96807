"""Realism figures of a real question set (prints; asserts nothing): the source of
curator.core.queries.realism.BUILTIN_REFERENCE.

Ingests a realq set (bench/realq/build.py or build_debian.py), imports its questions as a production
log, approves each with the chunks of its answer file as gold (as bench/validity.py does), measures
every question (realism.measure, against its best gold chunk) and prints the median and quartiles of
each figure and the share of each form, as a BUILTIN_REFERENCE literal.

    .venv/bin/python bench/realism_reference.py --realq /tmp/realq [--project /tmp/realism-ref.curator]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from validity import import_real_questions  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.queries import realism  # noqa: E402
from curator.core.store import open_project  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realq", default="/tmp/realq")
    parser.add_argument("--project", help="Project file to use (default: realism-ref.curator next to --realq).")
    args = parser.parse_args()
    realq = Path(args.realq)
    project = Path(args.project or realq.parent / f"realism-ref-{realq.name}.curator")
    db = open_project(project, create=True)
    ingest(db, [realq / "corpus"])
    print(f"{import_real_questions(db, realq, project.parent)} real questions approved now ({project})")
    figures = realism.project_real_figures(db)
    summary = realism.summarize(figures)
    print(json.dumps(summary, indent=1))
    cap, basis = realism.overlap_cap(db)
    print(f"overlap cap (upper quartile): {cap} from {basis}")


if __name__ == "__main__":
    main()
