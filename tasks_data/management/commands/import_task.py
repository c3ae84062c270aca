from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tasks_data.card_import import import_task
from tasks_data.importer import CluesImportError

from .ensure_local_researcher import LOCAL_RESEARCHER, RESEARCHERS_GROUP


def _researcher(username: str, option: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"{option}: no user {username!r}")
    if not (user.is_superuser or user.groups.filter(name=RESEARCHERS_GROUP).exists()):
        raise CommandError(f"{option}: {username!r} is not a researcher (superuser or '{RESEARCHERS_GROUP}' group)")
    return user


class Command(BaseCommand):
    help = (
        "Import a task of your own: PATH is a folder (or a zip of one) with task.toml, the instructions and the "
        "data in the CLUES unified format (JSONL). Everything is checked first; on any error nothing is imported. "
        "The task is its owner's, shared with --share and public with --public."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a folder with task.toml, or a zip of one")
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help=f"the researcher who owns the task (default: the local researcher {LOCAL_RESEARCHER!r})",
        )
        parser.add_argument(
            "--share", nargs="+", default=[], metavar="USERNAME", help="researchers who may use the task too"
        )
        parser.add_argument(
            "--public", action="store_true", default=None, help="every researcher may use it (an operator's choice)"
        )

    def handle(self, *args, path, owner, share, public, **options):
        if owner is None and not get_user_model().objects.filter(username=LOCAL_RESEARCHER).exists():
            raise CommandError(
                f"no owner: the local researcher {LOCAL_RESEARCHER!r} does not exist; run "
                "`manage.py ensure_local_researcher` or give --owner USERNAME"
            )
        user = _researcher(owner or LOCAL_RESEARCHER, "--owner")
        others = [_researcher(name, "--share") for name in share]
        try:
            result = import_task(path, owner=user, share_with=others, public=public)
        except CluesImportError as exc:
            raise CommandError(
                f"{len(exc.errors)} problem(s) in {path}; nothing was imported:\n  " + "\n  ".join(exc.errors)
            ) from None
        spec, data = result.spec, result.data
        sizes = sorted({k for k, _ in data.train})
        out = self.stdout.write
        out(
            f"{spec.name} ({spec.slug}): {spec.answer_kind.name} answers"
            + (f": {', '.join(spec.labels)}" if spec.labels else "")
        )
        out(f"  test items: {len(data.test)}")
        out(
            "  training files: "
            + ", ".join(f"{k} shots x {sum(1 for kk, _ in data.train if kk == k)} splits" for k in sizes)
            + f" ({len(data.training_examples)} examples)"
        )
        out("  chains: " + " ".join("->".join(str(c[k]) for k in sorted(c)) for c in data.chains))
        out(f"  about {spec.seconds_per_item:g} s an item (until the first workers are measured)")
        owner_line = f"  owner: {user.get_username()}"
        if others:
            owner_line += "; shared with " + ", ".join(u.get_username() for u in others)
        out(owner_line + ("; public" if result.task.public else ""))
        if not result.changed:
            out("Nothing changed: this task was already imported as it is.")
            return
        out(f"{'Imported' if result.created else 'Updated'} {spec.slug}. Try it:")
        shots = " ".join(map(str, (0, *sizes)))
        out(f"  manage.py launch_study --name {spec.slug}-pilot --tasks {spec.slug} --shots {shots}")
