from django.apps import apps
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation import urls as protocol_urls
from results import urls as results_urls
from tasks_data.views import task_list

urlpatterns = [
    path("", task_list, name="task-list"),
    # One "protocol" namespace for the API: annotation's endpoints and results' (results sits above annotation).
    path("", include((protocol_urls.urlpatterns + results_urls.api_urlpatterns, protocol_urls.app_name))),
    path("", include("annotation.ui_urls")),
    path("", include(results_urls.urlpatterns)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI from installed static files (drf-spectacular-sidecar); its start-up script is a file of its own
    # (?script) and the page has no inline style, as the Content-Security-Policy requires (templates/api_docs.html).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs.html"),
         name="swagger-ui"),
]

if apps.is_installed("benchmarks.ceiling"):
    from benchmarks.ceiling.views import CeilingView

    urlpatterns.append(path("bench/ceiling/", CeilingView.as_view()))

handler400 = "clues_platform.errors.bad_request"
handler403 = "clues_platform.errors.permission_denied"
handler404 = "clues_platform.errors.page_not_found"
handler500 = "clues_platform.errors.server_error"
