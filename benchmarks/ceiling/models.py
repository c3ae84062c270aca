from django.db import models


class Ping(models.Model):
    at = models.DateTimeField(auto_now_add=True)
    value = models.IntegerField()

    # Declared: the app is installed only for the load benchmark, so the type checker's settings do not see it.
    objects: models.Manager["Ping"] = models.Manager()
