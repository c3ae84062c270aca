"""The dashboard page where a researcher writes a study's attention checks (``annotation.attention``)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import attention
from annotation.access import actor, researcher_required, study_for
from annotation.models import AttentionCheck
from tasks_data.registry import find_task


@researcher_required
@require_http_methods(["GET", "POST"])
def attention_checks(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_for(request, study_id)
    errors: dict[str, list[str]] = {}
    posted = request.POST if request.method == "POST" else {}
    if request.method == "POST":
        try:
            position = int(request.POST.get("position", ""))
        except ValueError:
            errors["position"] = ["a whole number: the 0-based test item the check comes before"]
        else:
            try:
                attention.add_check(
                    study,
                    task=request.POST.get("task", ""),
                    position=position,
                    question=request.POST.get("question", ""),
                    context=request.POST.get("context", ""),
                    expected=request.POST.get("expected", ""),
                    actor=actor(request),
                )
            except ValidationError as exc:
                errors = exc.message_dict
            else:
                messages.success(request, "Attention check added.")
                return redirect("dashboard-attention-checks", study_id=study.pk)
    checks = AttentionCheck.objects.filter(study=study).select_related("task").order_by("task_id", "position", "id")
    ctx = {
        "study": study,
        "checks": checks,
        "errors": errors,
        "posted": posted,
        "max_question": AttentionCheck.MAX_QUESTION,
        "max_context": AttentionCheck.MAX_CONTEXT,
        "tasks": [(spec.slug, spec.name, ", ".join(spec.labels)) for spec in map(find_task, study.tasks) if spec],
    }
    return render(request, "dashboard/attention_checks.html", ctx, status=400 if errors else 200)
