"""The expert's walk through every task, at 1366x800 by keyboard and 390x844 by touch, on the official data:
prints per task and width the share of item loads with Submit / the answer controls / the item's text on
screen, feedback verdicts in view, self-undone marks, and the keys (laptop) or taps (phone) per item, before
(the keys the page had: arrows, Shift, Space; a Tab per ReCoRD candidate; a second tap on a one-word name) and
after (jump keys, candidate keys, one tap per one-word name).

    .venv/bin/python benchmarks/worker_walk.py            # every item (long: CoNLL03 and WikiANN have 600 each)
    .venv/bin/python benchmarks/worker_walk.py --sample 10 --tasks squad2 record

It runs tests/browser/test_worker_walk.py with CLUES_WALK_ALL=1 (or CLUES_WALK_SAMPLE) on the PostgreSQL of
DATABASE_URL and needs CLUES_DATA (the official zip) and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="first and longest N items of each step (0: all)")
    parser.add_argument("--tasks", nargs="*", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "figures.json"
        env = dict(os.environ, CLUES_WALK_FIGURES=str(figures))
        if args.sample:
            env["CLUES_WALK_SAMPLE"] = str(args.sample)
        else:
            env["CLUES_WALK_ALL"] = "1"
        if args.tasks:
            env["CLUES_WALK_TASKS"] = " ".join(args.tasks)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/browser/test_worker_walk.py"],
            cwd=ROOT,
            env=env,
            check=False,
        )
        if not figures.exists():
            print("the walk wrote no figures (see the test output above)")
            return 1
        data = json.loads(figures.read_text())
    print(
        "\n| Task | Width | Items | Submit on screen | Controls on screen | Text on screen | Verdicts in view |"
        " Self-undone | Keys or taps per item, before -> after (mean; max) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, s in data.items():
        task, width = name.split()
        unit = "taps" if width == "phone" else "keys"
        print(
            f"| {task} | {width} | {s['items']} | {s['submit']:.0%} | {s['controls']:.0%} | {s['text']:.0%} |"
            f" {s['verdicts']} | {len(s['undone'])} | {unit} {s['before_mean']} -> {s['per_item_mean']};"
            f" {s['before_max']} -> {s['per_item_max']} |"
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
