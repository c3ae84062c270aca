"""Store baseline runs made elsewhere (``benchmarks/gpu_sweep.py`` on a GPU machine).

The file is ``{"format": "clues-baseline-runs/1", "runs": [...]}``, each run in the shape of
``BaselineRun`` (task slug, method, model, shots, split, seed, timings, predictions by CLUES test
id). Predictions are re-scored here against the imported test set's gold, so a file cannot
carry a score its predictions do not earn; the whole file is stored in one transaction or not at
all. A run already completed here (same task, method, model, shots, split, seed) is left alone, and so is one
a live process is running here now (named on stderr).
"""

import json

from django.core.management.base import BaseCommand, CommandError

from baselines import services


class Command(BaseCommand):
    help = "Import baseline runs exported as JSON (benchmarks/gpu_sweep.py) into BaselineRun rows."

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, file, **options):
        try:
            with open(file, encoding="utf-8") as fh:
                payload = json.load(fh)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{file} is not JSON: {exc}") from None
        try:
            imported = services.import_runs(payload)
        except ValueError as exc:
            raise CommandError(f"{file}: {exc}") from None
        for running in imported.running:
            self.stderr.write(f"left alone: {running}")
        self.stdout.write(
            f"imported {imported.created} run(s); {imported.kept} already completed here were left alone"
            + (f"; {len(imported.running)} being run here now were left to their runners" if imported.running else "")
        )
