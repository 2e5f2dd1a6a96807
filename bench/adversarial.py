"""Adversarial lines through every text loader: each must parse in linear time.

Before issue 20 a Markdown heading "# a" + 2,000 spaces + "b" took 27 s (cubic backtracking),
"[a " * 20,000 took 7 s, reST "`a <b " * 20,000 5.5 s and 20,000 unclosed HTML "<a " 65 s.
Prints wall and CPU seconds per case at n and 4n, and the ratio 4n/n (about 4 for linear time,
16 for quadratic), next to a reference: a plain paragraph of the same size. Never asserts.

    .venv/bin/python bench/adversarial.py [--n 20000]
"""

from __future__ import annotations

import argparse
import time

from curator.core.corpus.loaders import parse_html, parse_markdown, parse_plain, parse_rst

CASES = {
    "plain paragraph (reference)": (parse_plain, lambda n: "word " * n),
    "md heading + spaces": (parse_markdown, lambda n: "# a" + " " * n + "b"),
    "md [a": (parse_markdown, lambda n: "[a " * n),
    "md ![a": (parse_markdown, lambda n: "![a " * n),
    "md <a": (parse_markdown, lambda n: "<a " * n),
    "rst `a <b": (parse_rst, lambda n: "`a <b " * n),
    "rst :a:`b <c": (parse_rst, lambda n: ":a:`b <c " * n),
    "html <a": (parse_html, lambda n: "<a " * n),
    "html <p><a": (parse_html, lambda n: "<p>x</p>" + "<a " * n),
}


def timed(parse, text: str) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    parse(text)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    n = parser.parse_args().n
    print(f"{'case':30} {'wall n':>8} {'cpu n':>8} {'cpu 4n':>8} {'4n/n':>6}")
    for name, (parse, make) in CASES.items():
        wall, cpu = timed(parse, make(n))
        _, cpu4 = timed(parse, make(4 * n))
        print(f"{name:30} {wall:8.3f} {cpu:8.3f} {cpu4:8.3f} {cpu4 / max(cpu, 1e-6):6.1f}")


if __name__ == "__main__":
    main()
