"""gunicorn's settings for this platform (the README's command names this file).

Only a reverse proxy that the deployment declares may say a request came over HTTPS. gunicorn by default
believes ``X-Forwarded-Proto: https``, ``X-Forwarded-Ssl: on`` and ``X-Forwarded-Protocol: ssl`` from
127.0.0.1: then any local client, or a proxy that passes a client's header through, would make a plain-HTTP
request secure (no HTTPS redirect, HSTS and Secure cookies sent over HTTP). Here that trust follows
``TRUSTED_PROXY_HOPS``, as Django's own does (``clues_platform/settings.py``):

- ``TRUSTED_PROXY_HOPS`` unset or 0 (no proxy): no address is trusted and no header is read;
- ``TRUSTED_PROXY_HOPS`` > 0: only the proxy's addresses (``FORWARDED_ALLOW_IPS``, default the local
  host, where a proxy on the same machine connects from) are trusted, for ``X-Forwarded-Proto`` only: the
  header Django reads and the proxy must set (overwriting the client's).
"""

import os

hops = int(os.environ.get("TRUSTED_PROXY_HOPS", "0") or "0")

if hops > 0:
    forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
    secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}
else:
    forwarded_allow_ips = ""
    secure_scheme_headers = {}
