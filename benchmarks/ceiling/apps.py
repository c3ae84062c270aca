from django.apps import AppConfig


class CeilingConfig(AppConfig):
    """The load benchmark's ceiling: installed only when CLUES_BENCH_CEILING=1. It also offers the ORM oracle of
    the worker's hot path (benchmarks/hot_orm.py) as CLUES_HOT_PATH=orm."""

    name = "benchmarks.ceiling"
    label = "bench_ceiling"

    def ready(self) -> None:
        from annotation.services.hot_paths import register_hot_path
        from benchmarks import hot_orm

        register_hot_path("orm", hot_orm)
