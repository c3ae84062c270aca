from django.apps import AppConfig


class TasksDataConfig(AppConfig):
    name = "tasks_data"
    verbose_name = "CLUES tasks and data"
