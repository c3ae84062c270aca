"""The Prolific page of a study on the dashboard, and its actions."""

from django.urls import path

from . import views

urlpatterns = [
    path("prolific/hooks/", views.prolific_hook, name="prolific-hook"),
    path("dashboard/studies/<int:study_id>/prolific/", views.study_prolific, name="dashboard-prolific"),
    *[
        path(
            f"dashboard/studies/<int:study_id>/prolific/{name}/",
            getattr(views, view),
            name=f"dashboard-prolific-{name}",
        )
        for name, view in (("token", "store_token"), ("publish", "publish"), ("sync", "sync"), ("pay", "pay"))
    ],
]
