from django.apps import AppConfig


class ResultsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "results"
    verbose_name = "Results (the paper's tables)"

    def ready(self):
        from annotation.results_changes import cohort_changed

        from .scores import mark_stale

        # The protocol app tells what changed (it is below this one and cannot call it).
        cohort_changed.connect(mark_stale, dispatch_uid="results.scores.mark_stale")
