"""Importing a task of one's own: a folder (or zip) with its card and its data in the CLUES unified format.

Everything is read and checked first (the card, then every line of every file by the one CLUES reader, strictly:
no gold string outside its context, unique ids), and each problem is named with its file, line and field; then
the task is written in one transaction, so nothing is stored half-way. A task belongs to the researcher who
imported it (``Task.owner``). Importing a task again replaces its data, unless the new data would change items
that something already uses (a study's cohorts, a model's runs): then the import is refused, naming them, and
the answered items stay as they were.

Who uses a task's items is told by the apps above this one, through ``register_use`` (``annotation``: studies,
``baselines``: runs), so that this app imports none of them.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from . import registry
from .cards import CARD_FILE, CardError, card_fingerprint, read_task_folder
from .importer import (
    _EXAMPLE_FIELDS,
    CluesImportError,
    TaskData,
    _example_fields,
    _test_identity,
    _write_task,
    read_task,
)
from .management.commands.ensure_local_researcher import RESEARCHERS_GROUP
from .models import Example, Task, TrainingSet
from .registry import TaskSpec


@dataclass(frozen=True)
class Use:
    """Something that uses a task's items: ``what`` names it for the researcher; it uses the test items, and the
    training sets of ``training_sets`` (ids)."""

    what: str
    test: bool = True
    training_sets: frozenset[int] = field(default_factory=frozenset)


USES: list[Callable[[Task], Iterable[Use]]] = []


def register_use(uses: Callable[[Task], Iterable[Use]]) -> None:
    """Add a reader of who uses a task's items (an app's ``AppConfig.ready``)."""
    if uses not in USES:
        USES.append(uses)


@dataclass(frozen=True)
class TaskImport:
    task: Task
    spec: TaskSpec
    created: bool
    changed: bool
    data: TaskData


def import_task(
    path: Path | str,
    *,
    owner,
    share_with: Sequence = (),
    public: bool | None = None,
    source: str | None = None,
    label: str = "",
) -> TaskImport:
    """Read, check and store the task of ``path`` as ``owner``'s (shared with ``share_with``, and public or not when
    ``public`` says); ``CluesImportError`` lists every problem (named by ``label``, else the path) and nothing is
    stored."""
    try:
        folder = read_task_folder(path, label=label)
    except CardError as exc:
        raise CluesImportError(exc.errors) from None
    spec = folder.spec
    errors: list[str] = []
    data = read_task(spec, folder.files, folder.where, errors, strict=True)
    if data is None or errors:
        raise CluesImportError(errors or [f"{folder.where}: the data cannot be read"])
    fingerprint = hashlib.sha256(f"{data.fingerprint()}:{card_fingerprint(folder.card)}".encode()).hexdigest()
    source = source or f"task folder {Path(path).name}"
    try:
        with transaction.atomic():
            task = Task.objects.select_for_update().filter(slug=spec.slug).first()
            if task is not None and (task.card is None or task.owner_id != owner.pk):
                raise CluesImportError(
                    [
                        f"{folder.where}/{CARD_FILE}, field 'slug': {spec.slug!r} is taken by another task; "
                        "choose another slug"
                    ]
                )
            created, changed = task is None, task is None or task.fingerprint != fingerprint
            if task is not None and changed:
                conflicts = _changed_uses(task, data)
                if conflicts:
                    raise CluesImportError(
                        [
                            f"{spec.slug}: the new data changes items that {what} uses, which stay as they were "
                            f"answered; nothing was imported. To use the new data, import it as a new task beside this "
                            f"one (another slug in {CARD_FILE}, e.g. {spec.slug}-2)"
                            for what in conflicts
                        ]
                    )
            if task is None:
                task = Task.objects.create(slug=spec.slug, source=source, owner=owner, card=folder.card)
            if changed:
                task.card = folder.card
                _write_task(data, source, task=task, fingerprint=fingerprint)
            if share_with:
                task.shared_with.add(*[user for user in share_with if user.pk != owner.pk])
            if public is not None and task.public != public:
                task.public = public
                task.save(update_fields=["public"])
    except IntegrityError:  # a task of this slug was stored meanwhile, by another import
        raise CluesImportError(
            [f"{folder.where}/{CARD_FILE}, field 'slug': {spec.slug!r} is taken by another task; choose another slug"]
        ) from None
    registry.refresh_task(spec)
    return TaskImport(task=task, spec=spec, created=created, changed=changed, data=data)


def _changed_uses(task: Task, data: TaskData) -> list[str]:
    """What uses items of ``task`` that ``data`` would change (their names); none when nothing uses the task."""
    uses = [use for reader in USES for use in reader(task)]
    if not uses:
        return []
    old, new = task.spec, data.spec
    if (old.answer_kind, old.labels, old.context_is_pair) != (new.answer_kind, new.labels, new.context_is_pair):
        return [use.what for use in uses]  # the answers themselves would read otherwise
    tests = Example.objects.filter(task=task, role=Example.Role.TEST).order_by("position")
    stored_test = [(identity, tuple(rest)) for identity, *rest in tests.values_list("identity", *_COMPARED)]
    test_changed = stored_test != [(_test_identity(r), _fields(_example_fields(r, new.answer_kind))) for r in data.test]
    changed_sets = set()
    for training_set in TrainingSet.objects.filter(task=task):
        items = training_set.items.order_by("position")
        stored = [
            (identity, tuple(rest))
            for identity, *rest in items.values_list("example__identity", *(f"example__{n}" for n in _COMPARED))
        ]
        rows = data.train.get((training_set.shots, training_set.split)) or []
        if stored != [(r.content_key, _fields(_example_fields(r, new.answer_kind))) for r in rows]:
            changed_sets.add(training_set.pk)
    return [use.what for use in uses if (use.test and test_changed) or use.training_sets & changed_sets]


# What an item is to a worker and to S1 (how the file writes its id aside).
_COMPARED = tuple(name for name in _EXAMPLE_FIELDS if name != "clues_id_is_number")


def _fields(values: dict) -> tuple:
    return tuple(values[name] for name in _COMPARED)


def import_upload(upload: UploadedFile, *, owner) -> TaskImport:
    """A task uploaded as a zip (the dashboard's form), imported as ``import_task`` does; problems name the file."""
    name = Path(upload.name or "task.zip").name
    with tempfile.TemporaryDirectory(prefix="task-upload-") as tmp:
        path = Path(tmp) / "upload.zip"
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        return import_task(path, owner=owner, source=f"upload {name}"[:200], label=name)


class NotAResearcher(ValueError):
    pass


def share(task: Task, username: str) -> None:
    """Share a task of one's own with the researcher ``username`` (``NotAResearcher`` names a wrong name)."""
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None or not (user.is_superuser or user.groups.filter(name=RESEARCHERS_GROUP).exists()):
        raise NotAResearcher(f"no researcher is called {username.strip()!r}")
    if user.pk != task.owner_id:
        task.shared_with.add(user)


def unshare(task: Task, username: str) -> None:
    task.shared_with.remove(*task.shared_with.filter(username=username))
