from django.core.management.base import BaseCommand

from annotation import services


class Command(BaseCommand):
    help = "Expire every enrollment past its study's time limit (frees its place); prints how many."

    def handle(self, *args, **options):
        count = services.expire_stale()
        self.stdout.write(f"expired {count} enrollment(s)")
