"""The protocol API (included at the root of clues_platform.urls, in the "protocol" namespace together
with the join link and ``results.urls.api_urlpatterns``)."""

from django.urls import path

from . import views as api

app_name = "protocol"

urlpatterns = [
    # Workers: the browser session bound by the join link.
    path("api/work/current/", api.WorkCurrentView.as_view(), name="work-current"),
    path("api/work/answer/", api.WorkAnswerView.as_view(), name="work-answer"),
    path("api/work/withdraw/", api.WorkWithdrawView.as_view(), name="work-withdraw"),
    path("api/work/revise/", api.WorkReviseView.as_view(), name="work-revise-api"),
    path("api/work/next-part/", api.WorkNextPartView.as_view(), name="work-next-part-api"),
    path("api/work/stop/", api.WorkStopView.as_view(), name="work-stop-api"),
    # Researchers.
    path("api/studies/", api.StudyListView.as_view(), name="study-list"),
    path("api/studies/<int:pk>/", api.StudyDetailView.as_view(), name="study-detail"),
    path("api/studies/<int:pk>/launch/", api.StudyLaunchView.as_view(), name="study-launch"),
    path("api/studies/<int:pk>/close/", api.StudyCloseView.as_view(), name="study-close"),
    path("api/studies/<int:pk>/enrollments/", api.StudyEnrollmentsView.as_view(), name="study-enrollments"),
    path("api/studies/<int:pk>/audit/", api.StudyAuditView.as_view(), name="study-audit"),
    path("api/cohorts/<int:pk>/launch/", api.CohortLaunchView.as_view(), name="cohort-launch"),
    path("api/cohorts/<int:pk>/close/", api.CohortCloseView.as_view(), name="cohort-close"),
    path("api/cohorts/<int:pk>/reopen/", api.CohortReopenView.as_view(), name="cohort-reopen"),
    path("api/enrollments/<int:pk>/", api.EnrollmentDetailView.as_view(), name="enrollment-detail"),
    path("api/enrollments/<int:pk>/filter/", api.EnrollmentFilterView.as_view(), name="enrollment-filter"),
    path("api/enrollments/<int:pk>/reinstate/", api.EnrollmentReinstateView.as_view(), name="enrollment-reinstate"),
    path("api/enrollments/<int:pk>/leave-out/", api.EnrollmentLeaveOutView.as_view(), name="enrollment-leave-out"),
    path("api/enrollments/<int:pk>/put-back/", api.EnrollmentPutBackView.as_view(), name="enrollment-put-back"),
]
