from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation import prolific, recruitment
from annotation.models import Study


class Command(BaseCommand):
    help = ("Create one Prolific study per cohort (published unless --draft); cohorts already on Prolific "
            "are left alone. Prints '<task slug> <shots> <prolific study id>' per cohort.")

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True)
        parser.add_argument("--draft", action="store_true", help="Create the studies without publishing them.")
        parser.add_argument("--site-url", default=settings.PROLIFIC_SITE_URL,
                            help="This platform's public address (default PROLIFIC_SITE_URL).")

    def handle(self, *args, **options):
        study = Study.objects.filter(pk=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']}")
        if not options["site_url"].startswith(("https://", "http://")):
            raise CommandError("give this platform's public address: --site-url https://... or PROLIFIC_SITE_URL")
        try:
            lines = recruitment.publish(study, site_url=options["site_url"], draft=options["draft"])
        except (ValueError, prolific.ProlificError) as exc:
            raise CommandError(str(exc)) from None
        for slug, shots, prolific_id in lines:
            self.stdout.write(f"{slug} {shots} {prolific_id}")
