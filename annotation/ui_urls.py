# Filled by the browser UI: /work/... worker pages and /dashboard/... researcher pages.
urlpatterns = []
