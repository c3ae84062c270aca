from django.apps import apps
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import urls as api_urls
from results import urls as results_urls
from tasks_data.views import task_list
from worker_pages import urls as worker_urls

urlpatterns = [
    path("", task_list, name="task-list"),
    # One "protocol" namespace: the join link, the protocol API and the results API.
    path(
        "",
        include(
            (worker_urls.join_urlpatterns + api_urls.urlpatterns + results_urls.api_urlpatterns, api_urls.app_name)
        ),
    ),
    path("", include(worker_urls.urlpatterns)),
    path("", include("dashboard.urls")),
    path("", include("recruitment.urls")),
    path("", include(results_urls.urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI from installed static files (drf-spectacular-sidecar); its start-up script is a file of its own
    # (?script) and the page has no inline style, as the Content-Security-Policy requires (templates/api_docs.html).
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs.html"),
        name="swagger-ui",
    ),
]

if apps.is_installed("benchmarks.ceiling"):
    from benchmarks.ceiling.views import CeilingView

    urlpatterns.append(path("bench/ceiling/", CeilingView.as_view()))

handler400 = "clues_platform.errors.bad_request"
handler403 = "clues_platform.errors.permission_denied"
handler404 = "clues_platform.errors.page_not_found"
handler500 = "clues_platform.errors.server_error"
