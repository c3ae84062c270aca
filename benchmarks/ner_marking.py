"""Names marked by touch at 390x844 by a scripted person who follows the page's hint, on every CoNLL03 and WikiANN
test item of the official data: items marked wrongly (the stored answer is not the gold one) and gestures per
item (a tap, a touch and hold, a drag, a button press each count one), in all and per kind of item (a name with
punctuation inside, names in a list, names that touch, plain, none).

    .venv/bin/python benchmarks/ner_marking.py                   # every test item (about 15 min on 2 cores)
    .venv/bin/python benchmarks/ner_marking.py --sample 3        # a few items of each kind (the suite's subset)
    .venv/bin/python benchmarks/ner_marking.py --gesture drag    # the person drags across names of several words

It runs tests/browser/test_ner_marking.py with CLUES_NER_ALL=1 (or CLUES_NER_SAMPLE) and needs the official zip
(CLUES_DATA, or ../shared/clues/) and /usr/bin/chromium. Exit status 1 when more than 1% of the items are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("inside", "list", "touch", "plain", "none")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="items of each kind per task (0: every test item)")
    parser.add_argument("--tasks", nargs="*", default=None, help="conll03, wikiann (default: both)")
    parser.add_argument("--gesture", choices=("tap", "drag"), default="tap")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "figures.json"
        env = dict(os.environ, CLUES_NER_FIGURES=str(figures), CLUES_NER_GESTURE=args.gesture)
        if args.sample:
            env["CLUES_NER_SAMPLE"] = str(args.sample)
        else:
            env["CLUES_NER_ALL"] = "1"
        if args.tasks:
            env["CLUES_NER_TASKS"] = " ".join(args.tasks)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-n", "0"]
            + ["tests/browser/test_ner_marking.py::test_a_person_following_the_hint_marks_names_right"],
            cwd=ROOT,
            env=env,
            check=False,
        )
        if not figures.exists():
            print("the walk wrote no figures (see the test output above)")
            return 1
        data = json.loads(figures.read_text())
    how = "drags across" if data["gesture"] == "drag" else "taps each word of"
    print(f"\nThe person {how} names of several words.")
    print("| Task | Items | Wrong | Gestures per item (mean; max) | " + " | ".join(KINDS) + " | Not markable |")
    print("|---|---|---|---|" + "---|" * len(KINDS) + "---|")
    for task, f in data["tasks"].items():
        kinds = []
        for kind in KINDS:
            b = f["by_kind"].get(kind)
            kinds.append(f"{b['wrong']}/{b['items']} wrong, {b['gestures'] / b['items']:.2f}" if b else "-")
        print(
            f"| {task} | {f['items']} | {len(f['wrong'])} ({len(f['wrong']) / max(1, f['items']):.1%}) |"
            f" {statistics.mean(f['gestures']):.2f}; {max(f['gestures'])} | "
            + " | ".join(kinds)
            + f" | {f['unreachable']} |"
        )
    for task, f in data["tasks"].items():
        for w in f["wrong"]:
            print(f"{task} wrong: gold {w['gold']} marked {w['marked']}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
