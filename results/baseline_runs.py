"""The baseline runs in the API, for researchers: ``GET /api/baselines/runs/`` and a run's transcript.

Who sees what: baseline runs are the deployment's reference results on the public benchmark, started by
the operator on the command line (``manage.py run_baselines``), not by a researcher on the web. They hold no
study, cohort or worker data (the prompts are CLUES items; the human answers never reach a model), and every
researcher's results page already shows them as model rows. So every researcher may list every run and read
its transcript; nothing here starts, changes or deletes a run (a researcher cannot spend the operator's
inference budget through the API). Anyone else gets 401 (anonymous) or 403.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.views import ResearcherView
from baselines.models import BaselineRun
from baselines.selectors import run_list, transcript


class BaselineRunListView(ResearcherView):
    @extend_schema(
        summary="Every baseline run: task, method, model, server, shots, split, seed, status, S1 "
        "(percent), requests, tokens, seconds",
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request):
        return Response({"runs": run_list()})


class BaselineRunTranscriptView(ResearcherView):
    @extend_schema(
        summary="One run's requests to its inference server and the answers, in order", responses=OpenApiTypes.OBJECT
    )
    def get(self, request, pk: int):
        run = get_object_or_404(BaselineRun.objects.select_related("task"), pk=pk)
        return Response({"run": run_list([run])[0], "transcript": transcript(run)})
