from django.apps import apps
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

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
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
]

if apps.is_installed("benchmarks.ceiling"):
    from benchmarks.ceiling.views import CeilingView

    urlpatterns.append(path("bench/ceiling/", CeilingView.as_view()))

handler400 = "clues_platform.errors.bad_request"
handler403 = "clues_platform.errors.permission_denied"
handler404 = "clues_platform.errors.page_not_found"
handler500 = "clues_platform.errors.server_error"
