from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tasks_data.models import Task
from tasks_data.registry import TASKS
from tasks_data.s1 import percent
from tasks_data.scoring import PredictionFileError, score_prediction_lines


class Command(BaseCommand):
    help = ('Score a prediction file (one {"id": ..., "prediction": [spans]} per line, ids as in the '
            "task's CLUES test file) against the test set and print S1.")

    def add_arguments(self, parser):
        parser.add_argument("predictions", help="JSONL prediction file")
        parser.add_argument("--task", required=True, choices=sorted(TASKS), help="task slug")

    def handle(self, *args, predictions, task, **options):
        try:
            task_row = Task.objects.get(slug=task)
        except Task.DoesNotExist:
            raise CommandError(f"task {task!r} has no data yet: run manage.py import_clues first") from None
        path = Path(predictions)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        try:
            result = score_prediction_lines(task_row, text.splitlines())
        except PredictionFileError as exc:
            raise CommandError(f"{path}:\n{exc}") from None
        self.stdout.write(f"{task_row.spec.name} S1 = {percent(result.s1):.1f} over {result.n} test items")
