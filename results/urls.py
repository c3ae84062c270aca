"""The results URLs. ``api_urlpatterns`` join the protocol API's namespace (clues_platform.urls);
``urlpatterns`` are the dashboard's results page and downloads."""

from django.urls import path

from . import baseline_runs, views

api_urlpatterns = [
    path("api/studies/<int:pk>/results/", views.StudyResultsView.as_view(), name="study-results"),
    path("api/studies/<int:pk>/export/<str:kind>/", views.StudyExportView.as_view(), name="study-export"),
    path(
        "api/enrollments/<int:pk>/predictions/",
        views.EnrollmentPredictionsView.as_view(),
        name="enrollment-predictions",
    ),
    path("api/baselines/runs/", baseline_runs.BaselineRunListView.as_view(), name="baseline-runs"),
    path(
        "api/baselines/runs/<int:pk>/transcript/",
        baseline_runs.BaselineRunTranscriptView.as_view(),
        name="baseline-run-transcript",
    ),
]

urlpatterns = [
    path("dashboard/studies/<int:study_id>/results/", views.study_results, name="dashboard-results"),
    path(
        "dashboard/studies/<int:study_id>/results/download.<str:fmt>",
        views.results_download,
        name="dashboard-results-download",
    ),
    path(
        "dashboard/studies/<int:study_id>/results/predictions.zip",
        views.predictions_download,
        name="dashboard-predictions-download",
    ),
    path("dashboard/studies/<int:study_id>/results/items/", views.study_items, name="dashboard-items"),
    path(
        "dashboard/studies/<int:study_id>/results/items/<int:cohort_id>/<path:clues_id>",
        views.study_item,
        name="dashboard-item",
    ),
    path(
        "dashboard/studies/<int:study_id>/results/<str:kind>.<str:fmt>",
        views.rows_download,
        name="dashboard-rows-download",
    ),
    path(
        "dashboard/enrollments/<int:enrollment_id>/predictions.jsonl",
        views.enrollment_predictions_download,
        name="dashboard-enrollment-predictions",
    ),
]
