"""The HTTP API (DRF): views only translate HTTP to annotation.services / selectors.

Researchers (session or token; see api.permissions): studies, cohorts, enrollments,
filtering and the audit log (results and exports: ``results.views``, under the same namespace).
A researcher sees only the studies they created (a superuser sees every study); another
researcher's study, cohort or enrollment answers 404, as one that does not exist.

Workers (the browser session bound by /join/<token>/; CSRF enforced): ``GET
/api/work/current/`` and ``POST /api/work/answer/``, the one path by which an answer is
created; there is no way to change or delete one (PUT/PATCH/DELETE: 405).

Every 4xx response carries a ``detail`` message; service exceptions map to statuses:
Conflict and TransitionNotAllowed 409, InvalidAnswer 400, django ValidationError 400 with
the field errors beside ``detail``.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import authentication, serializers, status
from rest_framework.exceptions import NotAuthenticated, ParseError, PermissionDenied
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from annotation import selectors, services
from annotation.models import Cohort, Enrollment

from .permissions import IsBoundWorker, IsResearcher, WorkerSessionAuthentication
from .serializers import (
    AnswerSubmitSerializer,
    AuditEventSerializer,
    EnrollmentRowSerializer,
    LaunchSerializer,
    ReasonSerializer,
    StudyCreateSerializer,
    StudyDetailSerializer,
    StudySerializer,
    SubmitResultSerializer,
    WithdrawSerializer,
    WorkStateSerializer,
    submit_payload,
    work_state_payload,
)

# ---------------------------------------------------------------- errors


def _summary(data) -> str:
    """One message out of DRF's field errors: 'field: message; other: message'."""
    if isinstance(data, dict):
        parts = []
        for key, value in data.items():
            text = _summary(value)
            parts.append(text if key in ("non_field_errors", "detail") else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(data, (list, tuple)):
        return " ".join(_summary(v) for v in data)
    return str(data)


def api_exception_handler(exc, context):
    """DRF's handler, plus the protocol's exceptions, and a ``detail`` message on every 4xx."""
    if isinstance(exc, Enrollment.DoesNotExist):
        # A session bound to an enrollment that no longer exists (e.g. a database reset).
        return Response(
            {"detail": "this browser session's enrollment no longer exists: open your study link again"},
            status=status.HTTP_403_FORBIDDEN,
        )
    if isinstance(exc, (services.Conflict, services.TransitionNotAllowed)):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, services.InvalidAnswer):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return Response({"detail": _summary(errors), **errors}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_exception_handler(exc, context)
    if response is not None and 400 <= response.status_code < 500:
        data = response.data
        if isinstance(data, dict) and "detail" not in data:
            response.data = {"detail": _summary(data), **data}
        elif not isinstance(data, dict):
            response.data = {"detail": _summary(data), "errors": data}
    return response


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, refusing (400) what it would let through to a 500.

    Nesting deep enough to exhaust the JSON decoder's recursion is a parse error, not a crash; and
    a lone surrogate (an escape such as "\\ud800" outside a pair) is not a character: it could be
    neither stored in PostgreSQL nor written back in a UTF-8 response.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply") from None
        if _has_lone_surrogate(data):
            raise ParseError(
                "JSON parse error - a string holds a lone surrogate (\\ud800-\\udfff), which is not a character"
            )
        return data


def _has_lone_surrogate(data) -> bool:
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(data, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in data.items())
    if isinstance(data, list):
        return any(_has_lone_surrogate(v) for v in data)
    return False


class ApiView(APIView):
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]  # DRF's defaults, with the safe JSON parser

    def get_exception_handler(self):
        return api_exception_handler


# ---------------------------------------------------------------- workers


class JSONResponses(DefaultContentNegotiation):
    """Always JSON, whatever the Accept header asks: the worker API has no other form, and reading the header was a
    noticeable part of a worker request's CPU (benchmarks/README.md). The request's body is chosen as DRF chooses."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class WorkerView(ApiView):
    """The bound enrollment is ``request.auth.enrollment_id``; nothing in the request can name another."""

    authentication_classes = [WorkerSessionAuthentication]
    permission_classes = [IsBoundWorker]
    renderer_classes = [JSONRenderer]
    parser_classes = [SafeJSONParser]
    content_negotiation_class = JSONResponses

    def permission_denied(self, request, message=None, code=None):
        # No session binding is "forbidden" with our message, not DRF's "credentials not provided".
        raise PermissionDenied(detail=message, code=code)

    @property
    def enrollment_id(self) -> int:
        return self.request.auth.enrollment_id


class WorkCurrentView(WorkerView):
    @extend_schema(
        tags=["work"],
        responses={200: WorkStateSerializer, 403: OpenApiTypes.OBJECT},
        summary="Where the worker is: step, progress and the current item (never its gold).",
    )
    def get(self, request):
        return Response(work_state_payload(services.current_item(enrollment_id=self.enrollment_id)))


class WorkAnswerView(WorkerView):
    @extend_schema(
        tags=["work"],
        request=AnswerSubmitSerializer,
        responses={
            201: SubmitResultSerializer,
            400: OpenApiResponse(description="invalid answer; detail names the problem"),
            409: OpenApiResponse(
                description="already answered, or not the current item; or the part's time limit had passed (then "
                "with the worker's state: the part ended, and its code)"
            ),
        },
        summary="Answer the current item, once; the training step returns its gold and S1.",
    )
    def post(self, request):
        body = AnswerSubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = services.submit_answer(
                enrollment_id=self.enrollment_id, item=body.validated_data["item"], answer=body.validated_data["answer"]
            )
        except services.TimeUp as exc:
            # The part's time had passed: said so, with where the worker is now (the part ended, and its code).
            now = work_state_payload(services.current_item(enrollment_id=self.enrollment_id))
            return Response({**now, "detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(submit_payload(result, result.answer.enrollment), status=status.HTTP_201_CREATED)


class WorkWithdrawView(WorkerView):
    @extend_schema(
        tags=["work"],
        request=WithdrawSerializer,
        responses={200: WorkStateSerializer},
        summary="The worker leaves the study; their place goes to someone else.",
    )
    def post(self, request):
        body = WithdrawSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.withdraw(enrollment_id=self.enrollment_id, actor="worker", reason=body.validated_data["reason"])
        return Response(work_state_payload(services.current_item(enrollment_id=self.enrollment_id)))


class WorkNextPartView(WorkerView):
    @extend_schema(
        tags=["work"],
        request=None,
        responses={200: WorkStateSerializer},
        summary="A worker between parts starts the next part (409 when there is none to start from here).",
    )
    def post(self, request):
        services.start_next_part(enrollment_id=self.enrollment_id)
        return Response(work_state_payload(services.current_item(enrollment_id=self.enrollment_id)))


class WorkStopView(WorkerView):
    @extend_schema(
        tags=["work"],
        request=None,
        responses={
            200: WorkStateSerializer,
            409: OpenApiResponse(description="not in a part, or not yet in its last minutes (as the page offers it)"),
        },
        summary="The worker ends the part near its time limit: with answers in it, the part's screen-out code and the "
        "pay for the time worked (answers kept); with none, a withdrawal (no code).",
    )
    def post(self, request):
        services.stop_part(enrollment_id=self.enrollment_id)
        return Response(work_state_payload(services.current_item(enrollment_id=self.enrollment_id)))


# ---------------------------------------------------------------- researchers


class ResearcherView(ApiView):
    # Token first, so that an anonymous request is told to authenticate (401, WWW-Authenticate: Token).
    authentication_classes = [authentication.TokenAuthentication, authentication.SessionAuthentication]
    permission_classes = [IsResearcher]

    def permission_denied(self, request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            raise NotAuthenticated("log in as a researcher (session or 'Authorization: Token <key>')")
        raise PermissionDenied(detail=message, code=code)

    def studies(self):
        return selectors.studies_visible_to(self.request.user)

    def get_study(self, pk: int):
        return get_object_or_404(self.studies(), pk=pk)

    def get_cohort(self, pk: int) -> Cohort:
        return get_object_or_404(Cohort.objects.select_related("study", "task").filter(study__in=self.studies()), pk=pk)

    def get_enrollment(self, pk: int) -> Enrollment:
        return get_object_or_404(
            Enrollment.objects.select_related("cohort__study", "cohort__task", "worker").filter(
                cohort__study__in=self.studies()
            ),
            pk=pk,
        )

    @property
    def actor(self) -> str:
        return self.request.user.get_username()


class StudyListView(ResearcherView):
    @extend_schema(
        tags=["studies"], responses=StudySerializer(many=True), summary="Your studies (a superuser sees all)."
    )
    def get(self, request):
        return Response(StudySerializer(self.studies().select_related("created_by"), many=True).data)

    @extend_schema(
        tags=["studies"],
        request=StudyCreateSerializer,
        responses={201: StudyDetailSerializer},
        summary="Create a study and its cohorts (one per task x shots); launch: open them at once.",
    )
    def post(self, request):
        body = StudyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        study = services.create_study(**body.validated_data, created_by=request.user)
        return Response(StudyDetailSerializer(study).data, status=status.HTTP_201_CREATED)


class StudyDetailView(ResearcherView):
    @extend_schema(
        tags=["studies"],
        responses=StudyDetailSerializer,
        summary="A study with its cohorts' progress (selectors.study_grid).",
    )
    def get(self, request, pk: int):
        return Response(StudyDetailSerializer(self.get_study(pk)).data)


class StudyLaunchView(ResearcherView):
    @extend_schema(
        tags=["studies"],
        request=LaunchSerializer,
        responses=inline_serializer("Launched", {"launched": serializers.IntegerField()}),
        summary="Open cohorts for joining (all of the study's, or the given ids).",
    )
    def post(self, request, pk: int):
        study = self.get_study(pk)
        body = LaunchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        cohorts = None
        if body.validated_data["cohorts"] is not None:
            cohorts = list(Cohort.objects.filter(study=study, pk__in=body.validated_data["cohorts"]))
            unknown = set(body.validated_data["cohorts"]) - {c.pk for c in cohorts}
            if unknown:
                raise serializers.ValidationError({"cohorts": [f"not cohorts of this study: {sorted(unknown)}"]})
        return Response({"launched": services.launch_cohorts(study=study, cohorts=cohorts, actor=self.actor)})


class StudyCloseView(ResearcherView):
    @extend_schema(
        tags=["studies"],
        request=ReasonSerializer,
        responses=StudyDetailSerializer,
        summary="Close the study: no one joins any of its cohorts any more.",
    )
    def post(self, request, pk: int):
        study = self.get_study(pk)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.close_study(study=study, actor=self.actor, reason=body.validated_data["reason"])
        return Response(StudyDetailSerializer(study).data)


class CohortLaunchView(ResearcherView):
    @extend_schema(
        tags=["cohorts"],
        request=None,
        responses=inline_serializer("CohortLaunched", {"launched": serializers.IntegerField()}),
        summary="Open one cohort for joining.",
    )
    def post(self, request, pk: int):
        cohort = self.get_cohort(pk)
        return Response({"launched": services.launch_cohorts(study=cohort.study, cohorts=[cohort], actor=self.actor)})


class CohortCloseView(ResearcherView):
    @extend_schema(
        tags=["cohorts"],
        request=ReasonSerializer,
        responses=inline_serializer("CohortClosed", {"closed": serializers.BooleanField()}),
        summary="Close one cohort: its link takes no new workers (those enrolled go on).",
    )
    def post(self, request, pk: int):
        cohort = self.get_cohort(pk)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.close_cohort(cohort=cohort, actor=self.actor, reason=body.validated_data["reason"])
        return Response({"closed": True})


class CohortReopenView(ResearcherView):
    @extend_schema(
        tags=["cohorts"],
        request=ReasonSerializer,
        responses={
            200: inline_serializer("CohortReopened", {"closed": serializers.BooleanField()}),
            400: OpenApiResponse(description="no reason given"),
            409: OpenApiResponse(description="not closed, no places left, or the study is closed"),
        },
        summary="Re-open a closed cohort that has places left; the reason is kept in the audit log.",
    )
    def post(self, request, pk: int):
        cohort = self.get_cohort(pk)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.reopen_cohort(cohort=cohort, actor=self.actor, reason=body.validated_data["reason"])
        return Response({"closed": False})


class StudyEnrollmentsView(ResearcherView):
    @extend_schema(
        tags=["enrollments"],
        responses=EnrollmentRowSerializer(many=True),
        parameters=[
            OpenApiParameter("cohort", int, description="only this cohort"),
            OpenApiParameter("state", str, description="only this state"),
        ],
        summary="Every enrollment with its progress, active time and pay.",
    )
    def get(self, request, pk: int):
        study = self.get_study(pk)
        cohort = None
        if request.query_params.get("cohort"):
            try:
                cohort = get_object_or_404(Cohort, study=study, pk=int(request.query_params["cohort"]))
            except ValueError:
                raise serializers.ValidationError({"cohort": ["must be a cohort id"]}) from None
        state = request.query_params.get("state") or None
        if state and state not in Enrollment.State.values:
            raise serializers.ValidationError({"state": [f"one of {', '.join(Enrollment.State.values)}"]})
        rows = selectors.study_enrollments(study, cohort=cohort, state=state)
        return Response(EnrollmentRowSerializer(rows, many=True).data)


class EnrollmentDetailView(ResearcherView):
    @extend_schema(
        tags=["enrollments"],
        responses=EnrollmentRowSerializer,
        summary="One enrollment with its progress, active time and pay.",
    )
    def get(self, request, pk: int):
        return Response(EnrollmentRowSerializer(selectors.enrollment_row(self.get_enrollment(pk))).data)


class EnrollmentFilterView(ResearcherView):
    @extend_schema(
        tags=["enrollments"],
        request=ReasonSerializer,
        responses=EnrollmentRowSerializer,
        summary="Filter a worker (with a reason), until their test step has started.",
    )
    def post(self, request, pk: int):
        enrollment = self.get_enrollment(pk)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.filter_enrollment(enrollment_id=enrollment.pk, actor=self.actor, reason=body.validated_data["reason"])
        return Response(EnrollmentRowSerializer(selectors.enrollment_row(self.get_enrollment(pk))).data)


class EnrollmentReinstateView(ResearcherView):
    service = staticmethod(services.reinstate_enrollment)

    @extend_schema(
        tags=["enrollments"],
        request=ReasonSerializer,
        responses=EnrollmentRowSerializer,
        summary="Reinstate a filtered worker (with a reason), if the cohort has room.",
    )
    def post(self, request, pk: int):
        enrollment = self.get_enrollment(pk)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        self.service(enrollment_id=enrollment.pk, actor=self.actor, reason=body.validated_data["reason"])
        return Response(EnrollmentRowSerializer(selectors.enrollment_row(self.get_enrollment(pk))).data)


@extend_schema_view(
    post=extend_schema(
        tags=["enrollments"],
        request=ReasonSerializer,
        responses=EnrollmentRowSerializer,
        summary="Leave a worker out of every result (with a reason), once their test step has started; they keep "
        "their place and pay.",
    )
)
class EnrollmentLeaveOutView(EnrollmentReinstateView):
    service = staticmethod(services.leave_out_of_results)


@extend_schema_view(
    post=extend_schema(
        tags=["enrollments"],
        request=ReasonSerializer,
        responses=EnrollmentRowSerializer,
        summary="Count a worker left out of the results again (with a reason).",
    )
)
class EnrollmentPutBackView(EnrollmentReinstateView):
    service = staticmethod(services.put_back_in_results)


class StudyAuditView(ResearcherView):
    @extend_schema(
        tags=["studies"],
        responses=AuditEventSerializer(many=True),
        parameters=[OpenApiParameter("q", str, description="text in action, actor or reason")],
        summary="The audit log: every transition and researcher action, with time, actor and reason.",
    )
    def get(self, request, pk: int):
        events = selectors.audit_log(self.get_study(pk))
        q = request.query_params.get("q")
        if q and "\x00" in q:
            raise serializers.ValidationError({"q": ["must not contain a NUL character"]})
        if q:
            events = events.filter(Q(action__icontains=q) | Q(actor__icontains=q) | Q(reason__icontains=q))
        return Response(AuditEventSerializer(events, many=True).data)


class WorkReviseView(WorkerView):
    """The latest test answer can be changed until the next one is submitted (no S1: no gold leaks)."""

    @extend_schema(
        tags=["work"],
        request=AnswerSubmitSerializer,
        responses={
            200: OpenApiResponse(description="the changed answer: item, position, answer"),
            400: OpenApiResponse(description="invalid answer; detail names the problem"),
            409: OpenApiResponse(description="not the latest test answer, or the step is over"),
        },
        summary="Change your latest test answer, until you submit the next one (audited).",
    )
    def post(self, request):
        body = AnswerSubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        answer = services.revise_last_test_answer(
            enrollment_id=self.enrollment_id, item=body.validated_data["item"], answer=body.validated_data["answer"]
        )
        return Response({"item": body.validated_data["item"], "position": answer.position, "answer": answer.texts})
