"""manage.py create_lab_workers: accounts for a study that recruits with lab accounts (``--platform local``).

A lab worker logs in with one of these accounts and opens a cohort's link; the study's provider takes the worker's
identity from the account. The accounts are plain users (not staff, no role), each a member of the study's lab
group only (``crowd.lab.group_name``): the dashboard refuses them, and no other study's link takes them. Their
passwords are generated here and printed once; nothing keeps them in clear.
"""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Study
from crowd.lab import group_name

MAX_COUNT = 500
USERNAME = "lab-s{study}-{number:03d}"


class Command(BaseCommand):
    help = (
        "Create N lab-worker accounts for a study whose platform is lab accounts (launch_study --platform "
        "local) and print each login (username and password, shown once), then each cohort's log-in link."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int, required=True, help="study id")
        parser.add_argument("--count", type=int, required=True, help=f"how many accounts (1 to {MAX_COUNT})")

    def handle(self, *args, study, count, **options):
        study_row = Study.objects.filter(pk=study).first()
        if study_row is None:
            raise CommandError(f"--study: no study {study}")
        if not study_row.provider.uses_accounts:
            raise CommandError(
                f"--study: study {study} recruits through {study_row.provider.name}, whose workers "
                "have no account here; lab accounts are for a study launched with --platform local"
            )
        if not 1 <= count <= MAX_COUNT:
            raise CommandError(f"--count: between 1 and {MAX_COUNT}, not {count}")
        User = get_user_model()
        logins: list[tuple[str, str]] = []  # (username, password)
        with transaction.atomic():
            group, _ = Group.objects.get_or_create(name=group_name(study))
            taken = set(
                User.objects.filter(username__startswith=USERNAME.format(study=study, number=0)[:-3]).values_list(
                    "username", flat=True
                )
            )
            number = 0
            while len(logins) < count:
                number += 1
                username = USERNAME.format(study=study, number=number)
                if username in taken:  # made by an earlier run: kept as it is
                    continue
                password = secrets.token_urlsafe(9)
                User.objects.create_user(username=username, password=password).groups.add(group)
                logins.append((username, password))
        for username, password in logins:
            self.stdout.write(f"{username} {password}")
        self.stderr.write(
            f"{count} lab account(s) for study {study} (the passwords are not shown again). Each worker "
            "logs in at the cohort's link:"
        )
        for cohort in study_row.cohorts.select_related("task").order_by("task__slug", "shots"):
            self.stderr.write(f"  {cohort.task.slug} {cohort.shots} /accounts/login/?next={cohort.join_path}")
