"""``manage.py fit_results --study ID``: the fits that need the model set (requirements/baselines.txt), stored
for the pages to read: the joint ability scale of humans and model runs (mirt's 1PL) and the crowd's
Dawid-Skene answers (crowd-kit), per cohort with annotators in results."""

import importlib.util

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from results import fits
from results.models import CohortFit

LIBRARIES = {CohortFit.Kind.ABILITY: "mirt", CohortFit.Kind.AGGREGATE: "crowdkit"}


class Command(BaseCommand):
    help = (
        "Fit and store, per cohort of a study: the joint ability scale (an item-response model over its annotators "
        "and the model runs of the same task and shots, mirt's 1PL) and the Dawid-Skene answers of its annotators "
        "(crowd-kit). Needs the model set: pip install -r requirements/baselines.txt."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, nargs="+", required=True, help="study id(s)")
        parser.add_argument("--only", choices=[k.value for k in CohortFit.Kind], default=None, help="fit one kind only")

    def handle(self, *args, study, only, **options):
        kinds = [CohortFit.Kind(only)] if only else list(CohortFit.Kind)
        missing = [LIBRARIES[k] for k in kinds if importlib.util.find_spec(LIBRARIES[k]) is None]
        if missing:
            raise CommandError(
                f"{', '.join(missing)} not installed: fitting needs the model set "
                "(`.venv/bin/pip install -r requirements/baselines.txt`, or `make baselines`)."
            )
        for study_id in study:
            found = Study.objects.filter(pk=study_id).first()
            if found is None:
                raise CommandError(f"no study {study_id}")
            stored = fits.fit_study(found, kinds=kinds)
            for row in stored:
                self.stdout.write(
                    f"study {study_id} {row.cohort.task.slug} {row.cohort.shots}-shot: {row.get_kind_display()}, "
                    f"{row.method} ({row.library})"
                )
            if not stored:
                self.stdout.write(f"study {study_id}: no cohort with annotators in results, nothing fitted")
            note = fits.not_fitted_note(found.tasks) if CohortFit.Kind.AGGREGATE in kinds else None
            if note:
                self.stdout.write(note)
