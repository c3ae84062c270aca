from django.apps import AppConfig


class RecruitmentConfig(AppConfig):
    """Prolific: the API client, publishing, verifying joins, syncing, places and bonuses."""

    name = "recruitment"
    verbose_name = "Recruitment on Prolific"

    def ready(self):
        from annotation import events

        from . import receivers

        events.verify_join.connect(receivers.verify_join, dispatch_uid="recruitment.verify_join")
        events.place_freed.connect(receivers.give_back_place, dispatch_uid="recruitment.give_back_place")
