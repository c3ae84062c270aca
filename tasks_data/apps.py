from django.apps import AppConfig


class TasksDataConfig(AppConfig):
    name = "tasks_data"
    verbose_name = "CLUES tasks and data"

    def ready(self):
        from . import registry, selectors

        # The tasks of one's own are data in the database: the registry asks for them by slug, or for all.
        registry.set_task_source(selectors.imported_specs)
