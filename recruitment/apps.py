from django.apps import AppConfig


class RecruitmentConfig(AppConfig):
    """Prolific: the API client, publishing, verifying joins, syncing, places and bonuses."""

    name = "recruitment"
    verbose_name = "Recruitment on Prolific"

    def ready(self):
        import crowd

        from .provider import ProlificProvider

        # Prolific's provider with this app's side (settings, hooks, fee) takes the plain one's place.
        crowd.register(ProlificProvider(), replace=True)
