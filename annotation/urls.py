# Filled by the protocol API: /join/<token>/ and /api/... routes.
urlpatterns = []
