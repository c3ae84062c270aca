from django.apps import AppConfig


class WorkerPagesConfig(AppConfig):
    name = "worker_pages"
    verbose_name = "The worker's pages"
