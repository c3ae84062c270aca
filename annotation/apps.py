from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Human annotation"

    def ready(self):
        from tasks_data import card_import

        from . import selectors

        # A study's cohorts answer a task's items: a task imported again may not change them.
        card_import.register_use(selectors.task_uses)
