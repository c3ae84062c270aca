from django.core.management.base import CommandError

from recruitment import client
from recruitment.sync import sync
from recruitment.tokens import NO_TOKEN, client_for

from ._study_command import StudyCommand


class Command(StudyCommand):
    help = "Read every cohort's submissions on Prolific: free returned/timed-out places, approve, report the rest."

    def handle(self, *args, **options):
        study = self.get_study(options)
        if client_for(study) is None:
            raise CommandError(NO_TOKEN)
        try:
            report = sync(study)
        except client.ProlificError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"freed {len(report.freed)}, approved {len(report.approved)}, "
            f"verified {len(report.verified)}, for the researcher {len(report.attention)} "
            f"(asked to return {len(report.return_requested)}), "
            f"filtered with the completion code {report.filtered_with_completion_code}, "
            f"unverified joins expired {len(report.expired)}"
        )
        for sub_id, pid, reason in report.attention:
            self.stdout.write(f"  {sub_id} {pid}: {reason}")
