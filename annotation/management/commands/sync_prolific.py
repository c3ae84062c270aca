from django.core.management.base import CommandError

from annotation import prolific, recruitment

from ._study_command import StudyCommand


class Command(StudyCommand):
    help = "Read every cohort's submissions on Prolific: free returned/timed-out places, approve, report the rest."

    def handle(self, *args, **options):
        study = self.get_study(options)
        if recruitment.client_for(study) is None:
            raise CommandError("no Prolific token: set PROLIFIC_API_TOKEN or store one on the dashboard")
        try:
            report = recruitment.sync(study)
        except prolific.ProlificError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"freed {len(report.freed)}, approved {len(report.approved)}, "
                          f"verified {len(report.verified)}, for the researcher {len(report.attention)}")
        for sub_id, pid, reason in report.attention:
            self.stdout.write(f"  {sub_id} {pid}: {reason}")
