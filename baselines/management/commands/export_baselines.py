"""List every baseline run (json or csv), or write one run's transcript (its answered requests) or its
predictions as a CLUES prediction file (the official format)."""

import csv
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from baselines.models import BaselineRun
from baselines.selectors import RUN_FIELDS, prediction_lines, run_list, transcript


class Command(BaseCommand):
    help = (
        "List every baseline run: task, method, model, server, shots, split, seed, status, attempts, S1 "
        "(s1_percent), the training examples its prompts held per item (min, median, max, of), its scoring, "
        "requests, tokens and seconds. --transcript RUN_ID writes one run's answered requests (JSON lines); "
        "--predictions RUN_ID its predictions as a CLUES prediction file (the official eval/S1.py scores it)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--output", "-o", help="a file to write (default: standard output)")
        parser.add_argument(
            "--transcript", type=int, metavar="RUN_ID", help="write this run's transcript instead of the list"
        )
        parser.add_argument(
            "--predictions",
            type=int,
            metavar="RUN_ID",
            help="write this completed run's predictions as a CLUES prediction file (JSONL, the official format)",
        )

    def handle(self, *args, format, output, transcript: int | None, predictions: int | None, **options):
        if predictions is not None:
            run = BaselineRun.objects.select_related("task").filter(pk=predictions).first()
            if run is None or run.status != BaselineRun.Status.COMPLETED:
                raise CommandError(f"no completed baseline run {predictions} (export_baselines lists them)")
            text = prediction_lines(run)
        elif transcript is not None:
            run = BaselineRun.objects.filter(pk=transcript).first()
            if run is None:
                raise CommandError(f"no baseline run {transcript} (export_baselines lists them)")
            text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in self._transcript(run))
        else:
            rows = run_list()
            text = self._csv(rows) if format == "csv" else json.dumps(rows, indent=1, ensure_ascii=False) + "\n"
        if output:
            # written whole or not at all: a half-written file would pass for a complete list
            import os
            import tempfile

            folder = os.path.dirname(os.path.abspath(output))
            with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, encoding="utf-8", newline="") as f:
                f.write(text)
            os.replace(f.name, output)
            self.stderr.write(f"wrote {output}")
        else:
            sys.stdout.flush()
            self.stdout.write(text, ending="")

    @staticmethod
    def _transcript(run):
        return transcript(run)

    @staticmethod
    def _csv(rows) -> str:
        import io

        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=RUN_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row[k] is None else row[k] for k in RUN_FIELDS})
        return out.getvalue()
