"""The dashboard's tasks page: the tasks a researcher may use, the upload of a task of their own (a zip of its folder,
as ``manage.py import_task`` takes it), and sharing one's own task with named researchers."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import researcher_required
from clues_http.uploads import takes_upload
from tasks_data import card_import
from tasks_data.importer import CluesImportError
from tasks_data.models import Task
from tasks_data.selectors import task_overview


class TaskUploadForm(forms.Form):
    file = forms.FileField(
        label="A task of your own (a zip of its folder)",
        help_text="task.toml, the instructions and the JSONL files in the CLUES unified format "
        "(the README's \u201cYour own task\u201d).",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )


@researcher_required
@takes_upload
@require_http_methods(["GET", "POST"])
def task_list(request: HttpRequest) -> HttpResponse:
    form, problems, status = TaskUploadForm(), [], 200
    if request.method == "POST":
        form = TaskUploadForm(request.POST, request.FILES)
        status = 400
        if form.is_valid():
            try:
                result = card_import.import_upload(form.cleaned_data["file"], owner=request.user)
            except CluesImportError as exc:
                problems = exc.errors
            else:
                word = "Imported" if result.created else "Updated" if result.changed else "Nothing changed in"
                messages.success(
                    request,
                    f"{word} \u201c{result.spec.name}\u201d ({result.spec.slug}): {len(result.data.test)} test items, "
                    f"training files of {', '.join(map(str, result.spec.shots))} shots. Choose it on a new study.",
                )
                return redirect("dashboard-tasks")
    rows = task_overview(request.user)
    for row in rows:
        task = row["task"]
        row["mine"] = task.owner_id == request.user.pk
        row["shared_with"] = sorted(u.get_username() for u in task.shared_with.all()) if row["mine"] else []
    return render(request, "dashboard/tasks.html", {"form": form, "problems": problems, "rows": rows}, status=status)


def _own_task(request: HttpRequest, slug: str) -> Task:
    """A task of the researcher's own (a superuser: any task of one's own), else 404."""
    task = Task.objects.filter(slug=slug, card__isnull=False).first()
    if task is None or not (task.owner_id == request.user.pk or request.user.is_superuser):
        raise Http404("no such task of yours")
    return task


@researcher_required
@require_POST
def task_share(request: HttpRequest, slug: str) -> HttpResponse:
    task = _own_task(request, slug)
    username = request.POST.get("username", "").strip()
    if request.POST.get("action") == "unshare":
        card_import.unshare(task, username)
        messages.success(request, f"{task.spec.name} is no longer shared with {username}.")
        return redirect("dashboard-tasks")
    try:
        card_import.share(task, username)
    except card_import.NotAResearcher as exc:
        messages.error(request, f"Not shared: {exc}.")
    else:
        messages.success(request, f"{task.spec.name} is shared with {username}: they may use it in their studies.")
    return redirect("dashboard-tasks")
