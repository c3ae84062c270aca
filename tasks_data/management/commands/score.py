from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tasks_data.models import Task
from tasks_data.registry import find_task, tasks
from tasks_data.s1 import MRC_GOLD, MRC_GOLD_NOTE, percent
from tasks_data.scoring import PredictionFileError, jsonl_lines, score_prediction_lines


class Command(BaseCommand):
    help = (
        'Score a prediction file (one {"id": ..., "prediction": [spans]} per line, ids as in the '
        "task's CLUES test file) against the test set and print S1."
    )

    def add_arguments(self, parser):
        parser.add_argument("predictions", help="JSONL prediction file")
        parser.add_argument("--task", required=True, metavar="SLUG", help="task slug (a CLUES task or your own)")
        parser.add_argument(
            "--mrc-gold",
            choices=MRC_GOLD,
            default=MRC_GOLD[0],
            help="SQuADv2/ReCoRD gold: the best single alternative (default, the SQuAD "
            "convention) or the published answer list as one set (literal eval/S1.py)",
        )
        parser.add_argument(
            "--strict",
            action="store_true",
            help="score exactly as the official eval/S1.py: no whitespace stripping, and "
            'the NER empty set only as the data writes it ([""])',
        )

    def handle(self, *args, predictions, task, mrc_gold, strict, **options):
        if find_task(task) is None:
            raise CommandError(f"--task: unknown task {task!r} (tasks: {', '.join(tasks())})")
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
            result = score_prediction_lines(task_row, jsonl_lines(text), mrc_gold=mrc_gold, strict=strict)
        except PredictionFileError as exc:
            raise CommandError(f"{path}:\n{exc}") from None
        self.stdout.write(f"{task_row.spec.name} S1 = {percent(result.s1):.1f} over {result.n} test items")
        if task_row.spec.answer_kind.gold_is_alternatives:
            self.stderr.write(MRC_GOLD_NOTE[mrc_gold])
        if strict:
            self.stderr.write("strict: scored as the official eval/S1.py (no stripping, gold as published)")
