from django.conf import settings
from django.core.management.base import CommandError

from recruitment import client
from recruitment.publish import publish

from ._study_command import StudyCommand


class Command(StudyCommand):
    help = (
        "Create one Prolific study per cohort (published unless --draft); cohorts already on Prolific "
        "are left alone. Prints '<task slug> <shots> <prolific study id>' per cohort."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--draft", action="store_true", help="Create the studies without publishing them.")
        parser.add_argument(
            "--site-url",
            default=settings.PROLIFIC_SITE_URL,
            help="This platform's public address (default PROLIFIC_SITE_URL).",
        )

    def handle(self, *args, **options):
        study = self.get_study(options)
        if not options["site_url"].startswith(("https://", "http://")):
            raise CommandError("give this platform's public address: --site-url https://... or PROLIFIC_SITE_URL")
        try:
            lines = publish(study, site_url=options["site_url"], draft=options["draft"])
        except (ValueError, client.ProlificError) as exc:
            raise CommandError(str(exc)) from None
        for slug, shots, prolific_id in lines:
            self.stdout.write(f"{slug} {shots} {prolific_id}")
