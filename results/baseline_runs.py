"""The baseline runs in the API, for researchers: ``GET /api/baselines/runs/`` and a run's transcript.

Who sees what: baseline runs are the deployment's reference results, started by the operator on the command
line (``manage.py run_baselines``), not by a researcher on the web. They hold no study, cohort or worker data (the
prompts are the task's items; the human answers never reach a model), and a researcher's results page shows them
as model rows. So a researcher may list the runs of every task they may use (``tasks_visible_to``: the CLUES
tasks, their own, those shared with them, public ones) and read their transcripts; a run of another researcher's
own task is a 404, as one that does not exist (its prompts are that researcher's items). Nothing here starts,
changes or deletes a run (a researcher cannot spend the operator's inference budget through the API). Anyone else
gets 401 (anonymous) or 403.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.views import ResearcherView
from baselines.models import BaselineRun
from baselines.selectors import run_list, transcript
from tasks_data.selectors import tasks_visible_to


class BaselineRunListView(ResearcherView):
    @extend_schema(
        summary="Every baseline run: task, method, model, server, shots, split, seed, status, attempts, S1 "
        "(s1_percent), the training examples its prompts held per item (min, median, max), its scoring, requests, "
        "tokens, seconds",
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request):
        runs = BaselineRun.objects.filter(task__in=tasks_visible_to(request.user)).select_related("task").order_by("pk")
        return Response({"runs": run_list(runs)})


class BaselineRunTranscriptView(ResearcherView):
    @extend_schema(
        summary="One run's requests to its inference server and the answers, in order", responses=OpenApiTypes.OBJECT
    )
    def get(self, request, pk: int):
        visible = BaselineRun.objects.filter(task__in=tasks_visible_to(request.user))
        run = get_object_or_404(visible.select_related("task"), pk=pk)
        return Response({"run": run_list([run])[0], "transcript": transcript(run)})
