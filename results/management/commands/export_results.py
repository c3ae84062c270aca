import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Enrollment, Study
from results import exports, formats
from tasks_data.s1 import MRC_GOLD

KINDS = exports.EXPORT_KINDS


class Command(BaseCommand):
    help = (
        "Export a study's results: the human-performance table (Table 5: mean ± sample std, ddof=1, of the "
        "annotators' test S1 in percent) as csv|json|md|tex, per-annotator rows, learning curves, agreement, "
        "items (humans against models, per test item) (csv|json|md), or annotators' test answers in the CLUES "
        "prediction format (JSONL)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="study id")
        parser.add_argument("--kind", choices=KINDS, default="table")
        parser.add_argument("--annotators", action="store_true", help="same as --kind annotators")
        parser.add_argument(
            "--format",
            dest="fmt",
            default=None,
            help="table: csv|json|md|tex (default md); rows: csv|json|md (default csv)",
        )
        parser.add_argument("--out", default=None, help="write here (atomically) instead of standard output")
        parser.add_argument(
            "--with-baselines", action="store_true", help="table: add the model rows of the completed baseline runs"
        )
        parser.add_argument(
            "--mrc-gold",
            choices=MRC_GOLD,
            default=MRC_GOLD[0],
            help="table, annotators and items: how MRC gold lists are read: best single alternative "
            "(default, the SQuAD convention) or the published list as one gold set "
            "(the literal eval/S1.py)",
        )
        parser.add_argument(
            "--all",
            dest="include_all",
            action="store_true",
            help="annotators: every enrollment (filtered, withdrawn...), not only completed ones",
        )
        parser.add_argument(
            "--enrollment",
            type=int,
            default=None,
            help="predictions: one annotator's JSONL (default: a zip of all, needs --out)",
        )

    def handle(
        self, *args, study, kind, annotators, fmt, out, with_baselines, include_all, enrollment, mrc_gold, **options
    ):
        study_row = Study.objects.filter(pk=study).first()
        if study_row is None:
            raise CommandError(f"--study: no study {study}")
        if annotators:
            kind = "annotators"
        if with_baselines and kind != "table":
            raise CommandError("--with-baselines applies to the table (--kind table)")
        if mrc_gold != MRC_GOLD[0] and kind not in ("table", "annotators", "items"):
            raise CommandError(
                "--mrc-gold applies to the table, the annotators' and the items' rows; prediction "
                "files carry answers, not scores: score them with `manage.py score --mrc-gold`"
            )
        try:
            if kind == "table":
                fmt = fmt or "md"
                if fmt not in formats.TABLE_FORMATS:
                    raise CommandError(f"--format: the table is written as {', '.join(formats.TABLE_FORMATS)}")
                data = exports.render_table(study_row, fmt, with_baselines=with_baselines, mrc_gold=mrc_gold)
            elif kind == "predictions":
                data = self._predictions(study_row, enrollment, out)
            else:
                fmt = fmt or "csv"
                if fmt not in formats.ROW_FORMATS:
                    raise CommandError(f"--format: {kind} is written as {', '.join(formats.ROW_FORMATS)}")
                data = exports.render_export(study_row, kind, fmt, include_all=include_all, mrc_gold=mrc_gold)
        except formats.ExportError as exc:
            raise CommandError(str(exc)) from None
        if out:
            try:
                path = exports.write_atomic(out, data)
            except OSError as exc:
                raise CommandError(f"--out: cannot write {out}: {exc}") from None
            self.stderr.write(f"wrote {path}")
        elif isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            self.stdout.write(data, ending="")

    def _predictions(self, study: Study, enrollment_id: int | None, out: str | None):
        if enrollment_id is None:
            if not out:
                raise CommandError(
                    "predictions of every annotator make a zip: give --out FILE.zip "
                    "(or --enrollment ID for one annotator's JSONL)"
                )
            return exports.predictions_zip(study)
        enrollment = (
            Enrollment.objects.select_related("cohort__task", "worker")
            .filter(pk=enrollment_id, cohort__study=study)
            .first()
        )
        if enrollment is None:
            raise CommandError(f"--enrollment: no enrollment {enrollment_id} in study {study.pk}")
        if enrollment.state != Enrollment.State.COMPLETED:
            raise CommandError(
                f"--enrollment: enrollment {enrollment_id} is {enrollment.state}; "
                "only completed enrollments have results"
            )
        return exports.prediction_jsonl(enrollment)
