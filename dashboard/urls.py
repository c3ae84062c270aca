"""The researcher's pages: /accounts/ log-in, /dashboard/... studies, cohorts and attention checks."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import attention_views, task_views
from . import views as dash

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("dashboard/", dash.study_list, name="dashboard"),
    path("dashboard/studies/new/", dash.study_new, name="dashboard-study-new"),
    path("dashboard/tasks/", task_views.task_list, name="dashboard-tasks"),
    path("dashboard/tasks/<slug:slug>/share/", task_views.task_share, name="dashboard-task-share"),
    path("dashboard/studies/<int:study_id>/", dash.study_detail, name="dashboard-study"),
    path("dashboard/studies/<int:study_id>/grid/", dash.study_grid_fragment, name="dashboard-study-grid"),
    path("dashboard/studies/<int:study_id>/launch/", dash.study_launch, name="dashboard-study-launch"),
    path("dashboard/studies/<int:study_id>/close/", dash.study_close, name="dashboard-study-close"),
    path(
        "dashboard/studies/<int:study_id>/attention-checks/",
        attention_views.attention_checks,
        name="dashboard-attention-checks",
    ),
    path("dashboard/cohorts/<int:cohort_id>/", dash.cohort_detail, name="dashboard-cohort"),
    path("dashboard/cohorts/<int:cohort_id>/launch/", dash.cohort_launch, name="dashboard-cohort-launch"),
    path("dashboard/cohorts/<int:cohort_id>/close/", dash.cohort_close, name="dashboard-cohort-close"),
    path("dashboard/cohorts/<int:cohort_id>/reopen/", dash.cohort_reopen, name="dashboard-cohort-reopen"),
    path("dashboard/enrollments/<int:enrollment_id>/filter/", dash.enrollment_filter, name="dashboard-filter"),
    path("dashboard/enrollments/<int:enrollment_id>/reinstate/", dash.enrollment_reinstate, name="dashboard-reinstate"),
    path("dashboard/enrollments/<int:enrollment_id>/leave-out/", dash.enrollment_leave_out, name="dashboard-leave-out"),
    path("dashboard/enrollments/<int:enrollment_id>/put-back/", dash.enrollment_put_back, name="dashboard-put-back"),
]
