from django.core.management.base import BaseCommand, CommandError

from annotation import recruitment
from annotation.models import Study


class Command(BaseCommand):
    help = "Top approved workers up to the study's hourly rate over their active time; never pays twice."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True)

    def handle(self, *args, **options):
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        try:
            report = recruitment.pay_bonuses(study)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for pid, amount in report.paid:
            self.stdout.write(f"paid {pid} {amount:.2f}")
        for pid in report.uncertain:
            self.stdout.write(f"UNKNOWN {pid}: the pay call got no answer; check it on Prolific (never retried)")
        for pid in report.failed:
            self.stdout.write(f"not paid {pid}: Prolific refused; run again later")
