"""The browser UI: /work/... worker pages, /dashboard/... researcher pages, /accounts/ login."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import attention_views, prolific_views
from . import dashboard_views as dash
from . import worker_views as work

urlpatterns = [
    # worker (the session is bound to one enrollment by /join/<token>/)
    path("work/", work.work, name="work"),
    path("work/start/", work.start, name="work-start"),
    path("work/answer/", work.answer, name="work-answer"),
    path("work/next/", work.next_item, name="work-next"),
    path("work/revise/", work.revise, name="work-revise"),
    # researcher login
    path("accounts/login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    # researcher dashboard
    path("dashboard/", dash.study_list, name="dashboard"),
    path("dashboard/studies/new/", dash.study_new, name="dashboard-study-new"),
    path("dashboard/studies/<int:study_id>/", dash.study_detail, name="dashboard-study"),
    path("dashboard/studies/<int:study_id>/grid/", dash.study_grid_fragment, name="dashboard-study-grid"),
    path("dashboard/studies/<int:study_id>/launch/", dash.study_launch, name="dashboard-study-launch"),
    path("dashboard/studies/<int:study_id>/close/", dash.study_close, name="dashboard-study-close"),
    path("dashboard/studies/<int:study_id>/attention-checks/", attention_views.attention_checks,
         name="dashboard-attention-checks"),
    path("dashboard/cohorts/<int:cohort_id>/", dash.cohort_detail, name="dashboard-cohort"),
    path("dashboard/cohorts/<int:cohort_id>/launch/", dash.cohort_launch, name="dashboard-cohort-launch"),
    path("dashboard/cohorts/<int:cohort_id>/close/", dash.cohort_close, name="dashboard-cohort-close"),
    path("dashboard/cohorts/<int:cohort_id>/reopen/", dash.cohort_reopen, name="dashboard-cohort-reopen"),
    path("dashboard/enrollments/<int:enrollment_id>/filter/", dash.enrollment_filter, name="dashboard-filter"),
    path("dashboard/enrollments/<int:enrollment_id>/reinstate/", dash.enrollment_reinstate,
         name="dashboard-reinstate"),
    # Prolific (issue 9)
    path("dashboard/studies/<int:study_id>/prolific/", prolific_views.study_prolific, name="dashboard-prolific"),
    *[path(f"dashboard/studies/<int:study_id>/prolific/{name}/", getattr(prolific_views, view),
           name=f"dashboard-prolific-{name}")
      for name, view in (("token", "store_token"), ("publish", "publish"), ("sync", "sync"), ("pay", "pay"))],
]
