import importlib

from django.apps import AppConfig

# Modules the results import only where a statistic is computed, so that a command or a test that builds no table
# never pays for them (scipy.stats alone: about 0.6 s); a server imports them as it starts instead
# (``import_for_requests``, clues_platform/wsgi.py), so that no request does.
LAZY_IMPORTS = ("scipy.stats", "scipy.special")


def import_for_requests() -> None:
    for name in LAZY_IMPORTS:
        importlib.import_module(name)


class ResultsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "results"
    verbose_name = "Results (the paper's tables)"

    def ready(self):
        from annotation.results_changes import cohort_changed

        from .scores import mark_stale

        # The protocol app tells what changed (it is below this one and cannot call it).
        cohort_changed.connect(mark_stale, dispatch_uid="results.scores.mark_stale")
