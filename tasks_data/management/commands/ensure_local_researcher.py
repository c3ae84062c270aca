"""Create (once) the researcher login a local install uses; `make run` calls this on every start.

The password is generated on the first run, kept in a git-ignored file (``.cache/`` by default)
and printed each time, so a developer can always log in. Nothing changes on later runs except
that the account is put back in shape (active, in the group, password).

A researcher is not staff and has no model permissions: the admin is for operators
(superusers) only, since it cannot keep one researcher's studies from another
(clues_platform/admin.py). Researchers use the dashboard and the API.
"""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

RESEARCHERS_GROUP = "researchers"
# The login `make run` creates: who owns what a command makes when it is given no owner (launch_study, import_task).
LOCAL_RESEARCHER = "researcher"
# Earlier versions gave the local researcher these apps' admin permissions: taken back on repair.
PROJECT_APPS = ("tasks_data", "annotation", "baselines")


class Command(BaseCommand):
    help = (
        "Create or repair the local researcher login (group 'researchers', not staff) and print its "
        "password, which is generated once and kept in --password-file."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default=LOCAL_RESEARCHER)
        parser.add_argument(
            "--password-file",
            default=str(settings.DATA_DIR / ".cache" / "researcher-password"),
            help="where the generated password is kept (git-ignored)",
        )

    def handle(self, *args, username, password_file, **options):
        password = self._password(Path(password_file))
        with transaction.atomic():
            group, _ = Group.objects.get_or_create(name=RESEARCHERS_GROUP)
            User = get_user_model()
            user, created = User.objects.get_or_create(username=username)
            user.is_active = True
            user.is_staff = False
            if created or not user.check_password(password):
                user.set_password(password)
            user.save()
            user.groups.add(group)
            user.user_permissions.remove(*Permission.objects.filter(content_type__app_label__in=PROJECT_APPS))
        self.stdout.write(f"Researcher login: {username} / {password}" + (" (created)" if created else ""))

    @staticmethod
    def _password(path: Path) -> str:
        try:
            password = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            password = ""
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}") from None
        if password:
            return password
        password = secrets.token_urlsafe(12)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(password + "\n")
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc}") from None
        return password
