"""The worker's pages: /work/... (the browser session is bound to one enrollment by the join link).

The join link itself (/join/<token>/) is in ``join_urlpatterns``: it sits in the "protocol" namespace
with the API (clues_platform.urls), as it always has.
"""

from django.urls import path

from . import join, views

join_urlpatterns = [
    path("join/<str:token>/", join.join, name="join"),
]

urlpatterns = [
    path("work/", views.work, name="work"),
    path("work/start/", views.start, name="work-start"),
    path("work/answer/", views.answer, name="work-answer"),
    path("work/next/", views.next_item, name="work-next"),
    path("work/revise/", views.revise, name="work-revise"),
    path("work/next-part/", views.next_part, name="work-next-part"),
    path("work/stop/", views.stop, name="work-stop"),
]
