from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation import services
from annotation.models import Study
from annotation.selectors import is_researcher

# The researcher `make run` creates (manage.py ensure_local_researcher): the owner by default, so that
# the study shows on that researcher's dashboard.
LOCAL_RESEARCHER = "researcher"


def _decimal(value: str) -> Decimal:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError(value) from None


def _default(name: str):
    return Study._meta.get_field(name).get_default()


def _help(name: str) -> str:
    field = Study._meta.get_field(name)
    return f"{field.help_text} (default {field.get_default()})"


class Command(BaseCommand):
    help = ("Create a study (one cohort per task x shots) and open its cohorts for joining. Prints "
            "'study <id>', then one line per cohort: '<task slug> <shots> <join path>'. Each option is the Study "
            "field of the same name (limits: annotation.models.Study).")

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--tasks", nargs="+", required=True, metavar="SLUG", help="task slugs, e.g. sst2 conll03")
        parser.add_argument("--shots", nargs="+", type=int, default=_default("shots"), metavar="K",
                            help=f"shot conditions among {' '.join(map(str, Study.SHOT_CONDITIONS))} (default: all)")
        parser.add_argument("--workers-per-cohort", "--workers", dest="workers_per_cohort", type=int,
                            default=_default("workers_per_cohort"), help=_help("workers_per_cohort"))
        parser.add_argument("--chain", type=int, default=_default("chain"), help=_help("chain"))
        parser.add_argument("--pay-rate", "--rate", dest="pay_rate", type=_decimal, default=_default("pay_rate"),
                            help=_help("pay_rate"))
        parser.add_argument("--platform", choices=Study.Platform.values, default=_default("platform"))
        parser.add_argument("--worker-id-param", default=_default("worker_id_param"), help=_help("worker_id_param"))
        parser.add_argument("--test-order", choices=Study.TestOrder.values, default=_default("test_order"))
        parser.add_argument("--filter-floor", type=float, default=_default("filter_floor"), help=_help("filter_floor"))
        parser.add_argument("--filter-fraction", type=float, default=_default("filter_fraction"),
                            help=_help("filter_fraction"))
        parser.add_argument("--no-filter-fraction", action="store_true", help="turn the fraction rule off")
        parser.add_argument("--idle-cap-seconds", "--idle-cap", dest="idle_cap_seconds", type=int,
                            default=_default("idle_cap_seconds"), help=_help("idle_cap_seconds"))
        parser.add_argument("--time-limit-minutes", "--time-limit", dest="time_limit_minutes", type=int,
                            default=_default("time_limit_minutes"), help=_help("time_limit_minutes"))
        parser.add_argument("--completion-code", default="")
        parser.add_argument("--screenout-code", default="")
        parser.add_argument("--owner", "--created-by", dest="owner", default=None, metavar="USERNAME",
                            help=f"the researcher who owns the study (default: the local researcher "
                                 f"{LOCAL_RESEARCHER!r} of ensure_local_researcher)")

    def _owner(self, username: str | None):
        name = username or LOCAL_RESEARCHER
        owner = get_user_model().objects.filter(username=name).first()
        if owner is None:
            if username:
                raise CommandError(f"--owner: no user {username!r}")
            raise CommandError(f"no owner: the local researcher {LOCAL_RESEARCHER!r} does not exist; run "
                               "`manage.py ensure_local_researcher` or give --owner USERNAME")
        if not is_researcher(owner):
            raise CommandError(f"--owner: {name!r} is not a researcher (superuser or 'researchers' group), "
                               "so the study would be visible to no one")
        return owner

    def handle(self, *args, **o):
        owner = self._owner(o.pop("owner"))
        if o.pop("no_filter_fraction"):
            o["filter_fraction"] = None
        params = {k: o[k] for k in ("shots", "chain", "workers_per_cohort", "pay_rate", "filter_floor",
                                    "filter_fraction", "platform", "worker_id_param", "test_order",
                                    "idle_cap_seconds", "time_limit_minutes", "completion_code", "screenout_code")}
        try:
            study = services.create_study(name=o["name"], tasks=o["tasks"], created_by=owner, launch=True, **params)
        except ValidationError as exc:
            problems = [f"{field}: {message}" for field, messages in exc.message_dict.items() for message in messages]
            raise CommandError("cannot create the study: " + "; ".join(problems)) from None
        self.stdout.write(f"study {study.pk}")
        for cohort in sorted(study.cohorts.select_related("task"), key=lambda c: (o["tasks"].index(c.task.slug),
                                                                                   c.shots)):
            self.stdout.write(f"{cohort.task.slug} {cohort.shots} {cohort.join_path}")
