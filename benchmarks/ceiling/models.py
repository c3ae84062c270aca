from django.db import models


class Ping(models.Model):
    at = models.DateTimeField(auto_now_add=True)
    value = models.IntegerField()
