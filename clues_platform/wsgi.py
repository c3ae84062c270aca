"""The WSGI application (gunicorn clues_platform.wsgi).

Everything a request needs is imported here, then ``gc.freeze()`` moves those long-lived objects
out of the garbage collector's reach: the project imports pandas and numpy, and without the freeze
a full collection in the middle of a request stalls it for tens of milliseconds (measured: 73 ms),
which shows in the tail latency of answer submission (benchmarks/README.md).
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from results.apps import import_for_requests

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clues_platform.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 - import every view module now, not on the first request
import_for_requests()  # what the results import where a statistic is computed (scipy.stats: 0.6 s of a first page)
gc.freeze()
