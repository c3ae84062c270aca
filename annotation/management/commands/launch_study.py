from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import services
from annotation.models import Study


def _decimal(value: str) -> Decimal:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError(value) from None


class Command(BaseCommand):
    help = ("Create a study (one cohort per task x shots) and open its cohorts for joining. Prints "
            "'study <id>', then one line per cohort: '<task slug> <shots> <join path>'.")

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--tasks", nargs="+", required=True, metavar="SLUG", help="task slugs, e.g. sst2 conll03")
        parser.add_argument("--shots", nargs="+", type=int, default=[0, 10, 20, 30], metavar="K",
                            help="shot conditions among 0 10 20 30 (default: all four)")
        parser.add_argument("--workers", type=int, default=3, help="workers per cohort (default 3)")
        parser.add_argument("--chain", type=int, default=1, help="training chain, named by its 10-shot split")
        parser.add_argument("--rate", type=_decimal, default=Decimal("12"), help="pay, USD per hour (default 12)")
        parser.add_argument("--platform", choices=Study.Platform.values, default=Study.Platform.PROLIFIC)
        parser.add_argument("--worker-id-param", default="worker_id", help="generic platform: the id parameter")
        parser.add_argument("--test-order", choices=Study.TestOrder.values, default=Study.TestOrder.FILE)
        parser.add_argument("--filter-floor", type=float, default=None,
                            help="filter a worker whose training S1 (0-1) is below this")
        parser.add_argument("--filter-fraction", type=float, default=0.5,
                            help="filter below this fraction of the others' mean training S1 (default 0.5)")
        parser.add_argument("--no-filter-fraction", action="store_true", help="turn the fraction rule off")
        parser.add_argument("--idle-cap", type=int, default=300, help="idle gaps count at most this many seconds")
        parser.add_argument("--time-limit", type=int, default=None, help="enrollments expire after these minutes")
        parser.add_argument("--completion-code", default="")
        parser.add_argument("--screenout-code", default="")
        parser.add_argument("--created-by", default=None, help="username of the researcher who owns the study")

    def handle(self, *args, **o):
        owner = None
        if o["created_by"]:
            owner = get_user_model().objects.filter(username=o["created_by"]).first()
            if owner is None:
                raise CommandError(f"--created-by: no user {o['created_by']!r}")
        try:
            study = services.create_study(
                name=o["name"], tasks=o["tasks"], shots=o["shots"], chain=o["chain"], workers_per_cohort=o["workers"],
                pay_rate=o["rate"], filter_floor=o["filter_floor"],
                filter_fraction=None if o["no_filter_fraction"] else o["filter_fraction"],
                platform=o["platform"], worker_id_param=o["worker_id_param"], test_order=o["test_order"],
                idle_cap_seconds=o["idle_cap"], time_limit_minutes=o["time_limit"],
                completion_code=o["completion_code"], screenout_code=o["screenout_code"], created_by=owner,
                launch=True,
            )
        except ValidationError as exc:
            problems = [f"{field}: {message}" for field, messages in exc.message_dict.items() for message in messages]
            raise CommandError("cannot create the study: " + "; ".join(problems)) from None
        self.stdout.write(f"study {study.pk}")
        for cohort in sorted(study.cohorts.select_related("task"), key=lambda c: (o["tasks"].index(c.task.slug),
                                                                                   c.shots)):
            self.stdout.write(f"{cohort.task.slug} {cohort.shots} {cohort.join_path}")
