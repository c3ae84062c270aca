from django.apps import AppConfig


class BaselinesConfig(AppConfig):
    name = "baselines"
    verbose_name = "Model baselines"
