from django.contrib import admin

from .models import BaselineRun

_HIDDEN = ("predictions", "item_scores")


@admin.register(BaselineRun)
class BaselineRunAdmin(admin.ModelAdmin):
    list_display = (
        "task",
        "method",
        "model",
        "backend",
        "server",
        "shots",
        "split",
        "seed",
        "status",
        "s1",
        "device",
        "attempts",
    )
    list_filter = ("status", "task", "method", "backend", "server", "shots")
    # Runs are written by run_baselines only; predictions are exported, not shown.
    exclude = _HIDDEN
    readonly_fields = [f.name for f in BaselineRun._meta.fields if f.name not in _HIDDEN]
