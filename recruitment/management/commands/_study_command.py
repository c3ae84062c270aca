"""What the Prolific commands share: ``--study ID`` and a clear error for an unknown study.

(A module whose name starts with "_" is not a command of its own.)
"""

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study


class StudyCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="The study's id (as the dashboard shows it).")

    @staticmethod
    def get_study(options) -> Study:
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        return study
