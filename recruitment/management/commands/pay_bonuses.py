from django.core.management.base import CommandError

from recruitment.bonuses import pay_bonuses

from ._study_command import StudyCommand


class Command(StudyCommand):
    help = "Top approved workers up to the study's hourly rate over their active time; never pays twice."

    def handle(self, *args, **options):
        study = self.get_study(options)
        try:
            report = pay_bonuses(study)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for pid, amount in report.paid:
            self.stdout.write(f"paid {pid} {amount:.2f}")
        for pid in report.uncertain:
            self.stdout.write(f"UNKNOWN {pid}: the pay call got no answer; check it on Prolific (never retried)")
        for pid in report.failed:
            self.stdout.write(f"not paid {pid}: Prolific refused; run again later")
