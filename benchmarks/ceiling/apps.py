from django.apps import AppConfig


class CeilingConfig(AppConfig):
    """The load benchmark's ceiling: installed only when CLUES_BENCH_CEILING=1."""

    name = "benchmarks.ceiling"
    label = "bench_ceiling"
