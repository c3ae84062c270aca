"""manage.py launch_study: one option per study parameter, derived from the Study model (``Study.parameters``),
and one per crowd platform setting (``annotation.platform_settings``), for that platform only."""

from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import models

import crowd
from annotation import estimates, platform_settings, services
from annotation.models import Study
from annotation.selectors import is_researcher
from clues_http.links import site_link
from tasks_data.management.commands.ensure_local_researcher import LOCAL_RESEARCHER

# Shorter spellings kept from earlier versions of this command.
ALIASES = {
    "workers_per_cohort": ("--workers",),
    "pay_rate": ("--rate",),
    "idle_cap_seconds": ("--idle-cap",),
    "time_limit_minutes": ("--time-limit",),
}
_UNSET = object()  # an option left out: the model's default applies (services.create_study)


def _decimal(value: str) -> Decimal:
    try:
        return Decimal(value)
    except InvalidOperation:
        raise ValueError(value) from None


_decimal.__name__ = "decimal number"  # argparse names the type in its error: "invalid decimal number value"

TYPES = {models.IntegerField: int, models.FloatField: float, models.DecimalField: _decimal}


def _type(field: models.Field):
    return next((t for cls, t in TYPES.items() if isinstance(field, cls)), str)


def _help(field: models.Field) -> str:
    if field.name == "name":
        return str(field.help_text)
    default = field.get_default()
    shown = (
        "generated"
        if field.name in ("completion_code", "screenout_code")
        else ("none" if default in (None, "") else default)
    )
    return f"{field.help_text} (default: {shown})".strip()


def _only(platform: str) -> str:
    return f"{platform} only: " if platform else ""


def add_parameter(parser, field: models.Field, *, only: str = "") -> None:
    """One option for a Study field (or a platform's setting: ``only`` names the platform); left out, the
    model's default applies (services.create_study)."""
    flags = (f"--{field.name.replace('_', '-')}", *ALIASES.get(field.name, ()))
    if field.name == "tasks":
        parser.add_argument(*flags, nargs="+", required=True, metavar="SLUG", help="task slugs, e.g. sst2 conll03")
    elif field.name == "shots":
        parser.add_argument(
            *flags,
            nargs="+",
            type=int,
            metavar="K",
            help="shot conditions: 0 and the tasks' training-file sizes (CLUES: 10 20 30); default: 0 and every "
            "size all the tasks have",
        )
    elif isinstance(field, models.BooleanField):
        parser.add_argument(*flags, action="store_true", default=_UNSET, help=_only(only) + str(field.help_text))
    else:
        choices = [value for value, _label in field.choices] if field.choices else None
        parser.add_argument(
            *flags,
            dest=field.name,
            type=_type(field),
            choices=choices,
            required=field.name == "name",
            help=_only(only) + _help(field),
        )
    if field.null:
        parser.add_argument(
            f"--no-{field.name.replace('_', '-')}",
            dest=field.name,
            action="store_const",
            const=None,
            help=f"leave {field.name} empty (off)",
        )


def _option_names() -> tuple[str, ...]:
    """Every option that is a study parameter or a platform's setting."""
    return (*Study.parameters(), *platform_settings.all_fields())


class Command(BaseCommand):
    help = (
        "Create a study (one cohort per task x shots) and open its cohorts for joining; without --platform "
        "it recruits on the first configured platform (a generic link until a recruitment platform is "
        "configured, to try locally). Prints "
        "'study <id>', then one line per cohort: '<task slug> <shots> <join path>'. Each option is the Study "
        "field of the same name (limits: annotation.models.Study), or a setting of one platform."
    )

    def add_arguments(self, parser):
        parser.set_defaults(**{name: _UNSET for name in _option_names()})
        fields = {f.name: f for f in Study._meta.concrete_fields}
        for name in Study.parameters():
            add_parameter(parser, fields[name])
        for provider, field in platform_settings.all_fields().values():
            add_parameter(parser, field, only=provider.name)
        parser.add_argument(
            "--owner",
            "--created-by",
            dest="owner",
            default=None,
            metavar="USERNAME",
            help=f"the researcher who owns the study (default: the local researcher "
            f"{LOCAL_RESEARCHER!r} of ensure_local_researcher)",
        )

    def _owner(self, username: str | None):
        name = username or LOCAL_RESEARCHER
        owner = get_user_model().objects.filter(username=name).first()
        if owner is None:
            if username:
                raise CommandError(f"--owner: no user {username!r}")
            raise CommandError(
                f"no owner: the local researcher {LOCAL_RESEARCHER!r} does not exist; run "
                "`manage.py ensure_local_researcher` or give --owner USERNAME"
            )
        if not is_researcher(owner):
            raise CommandError(
                f"--owner: {name!r} is not a researcher (superuser or 'researchers' group), "
                "so the study would be visible to no one"
            )
        return owner

    def handle(self, *args, **options):
        owner = self._owner(options["owner"])
        given = {name: options[name] for name in _option_names() if options[name] is not _UNSET}
        name, tasks = given.pop("name"), given.pop("tasks")
        # Without --platform: the first configured platform (crowd.default), said so when it is not the usual one.
        preferred = crowd.get(crowd.DEFAULT)
        trial = "platform" not in given and not preferred.is_configured(owner=owner)
        try:
            study = services.create_study(name=name, tasks=tasks, created_by=owner, launch=True, **given)
        except ValidationError as exc:
            problems = [f"{field}: {message}" for field, messages in exc.message_dict.items() for message in messages]
            raise CommandError("cannot create the study: " + "; ".join(problems)) from None
        self.stdout.write(f"study {study.pk}")
        cohorts = sorted(study.cohorts.select_related("task"), key=lambda c: (tasks.index(c.task.slug), c.shots))
        for cohort in cohorts:
            self.stdout.write(f"{cohort.task.slug} {cohort.shots} {cohort.join_path}")
        # The estimate each cohort's workers and platform are shown (annotation.estimates), and a figure of the
        # researcher's own that is far off it.
        for cohort in cohorts:
            est = estimates.cohort_estimate(cohort)
            if options["verbosity"] > 1:  # the study page shows it too
                minutes = " + ".join(str(p.listed_minutes) for p in est.parts)
                limits = " / ".join(str(p.time_limit) for p in est.parts)
                self.stderr.write(
                    f"{cohort.task.slug} {cohort.shots}-shot: about {est.listed_minutes} min ({est.source}) in "
                    f"{len(est.parts)} part(s) of {minutes} min, with time limits of {limits} min; pays "
                    f"{est.total_pay} {study.pay_currency}"
                )
            warning = estimates.override_warning(study=study, task=cohort.task, shots=cohort.shots)
            if warning:
                self.stderr.write(f"warning: {warning}")
        if trial:
            query = study.provider.join_query(study).replace("{WORKER_ID}", "me")
            self.stderr.write(
                f"{preferred.configuration_help}, so the study recruits through a {study.provider.name} "
                f"(--platform {study.platform}); give --platform {preferred.slug} to recruit on "
                f"{preferred.name}. Try it "
                f"yourself: open {site_link(cohorts[0].join_path + query)} (any worker id; a new id is a "
                f"new worker)."
            )
