from django.apps import AppConfig


class BaselinesConfig(AppConfig):
    name = "baselines"
    verbose_name = "Model baselines"

    def ready(self):
        from tasks_data import card_import

        from . import selectors

        # A run's predictions and scores are of a task's items: a task imported again may not change them.
        card_import.register_use(selectors.task_uses)
