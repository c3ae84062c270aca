"""Rate limits: the join link per client address, and password logins per address and per username.

Counts are fixed windows kept in the Django cache (``cache.add`` then ``cache.incr``), so they
hold across gunicorn processes when the cache is shared (Redis via ``CACHE_URL``/``REDIS_URL``);
with the default per-process memory cache each process counts on its own.

Settings (from the environment, see clues_platform/settings.py):

* ``JOIN_RATE_LIMIT`` (``"30/m"`` in production): requests to ``/join/<token>/`` per client
  address; over it, a 429 page says when to come back. ``"0"`` turns it off (benchmarks/load.py
  does: all its simulated workers come from 127.0.0.1).
* ``LOGIN_RATE_LIMIT`` (``"10/15m"`` in production): failed password logins per client address
  and, separately, per username. ``LoginRateLimitBackend`` reserves each password check before it
  is made (an atomic increment) and refuses it over the limit, whatever the path, so simultaneous
  guesses get no more checks than the limit; a successful login gives its reservation back. Once
  the limit is reached, ``LoginRateLimitMiddleware`` also answers 429 to the login forms
  (``LOGIN_RATE_LIMIT_PATHS``: the researcher login and the admin's).
* ``TRUSTED_PROXY_HOPS`` (0): the client address is ``REMOTE_ADDR``; behind N reverse proxies
  that each append to ``X-Forwarded-For``, set N and the address the outermost proxy saw is used.

A rate is ``"<count>/<window>"``, the window one of ``s``, ``m``, ``h``, ``d``, optionally with a
multiple (``"10/15m"``); ``"0"`` or empty is off.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass
from html import escape

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse

from clues_http.negotiation import wants_json

log = logging.getLogger(__name__)
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Rate:
    limit: int
    window: int  # seconds

    def __str__(self) -> str:
        return f"{self.limit} per {self.window} s"


def parse_rate(text: str | None) -> Rate | None:
    """``"30/m"`` -> Rate(30, 60); ``"10/15m"`` -> Rate(10, 900); ``"0"``, ``""`` or None -> None (off)."""
    if text is None or text.strip() in ("", "0"):
        return None
    match = _RATE.match(text)
    if not match or int(match.group(1)) < 1:
        raise ImproperlyConfigured(f"rate {text!r}: use '<count>/<window>' such as '30/m' or '10/15m', or '0' (off)")
    count, multiple, unit = match.groups()
    return Rate(int(count), int(multiple or 1) * _UNITS[unit])


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR; with TRUSTED_PROXY_HOPS = n > 0, the n-th address from the right of X-Forwarded-For."""
    hops = getattr(settings, "TRUSTED_PROXY_HOPS", 0)
    if hops > 0:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _key(scope: str, subject: str, rate: Rate, now: float) -> str:
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"ratelimit:{scope}:{digest}:{rate.window}:{int(now // rate.window)}"


def _retry_after(rate: Rate, now: float) -> int:
    return max(1, int(rate.window - now % rate.window))


def hit(scope: str, subject: str, rate: Rate | None) -> int | None:
    """Count one request of ``subject``; the seconds until the window ends if it is over the limit, else None.

    A limit the cache cannot count (Redis unreachable) lets the request through, with a warning:
    a rate limiter must not take the site down.
    """
    return _hit_key(scope, subject, rate)[0]


def _hit_key(scope: str, subject: str, rate: Rate | None) -> tuple[int | None, str | None]:
    """``hit``, and the key counted (None when nothing was counted)."""
    if rate is None:
        return None, None
    now = time.time()
    key = _key(scope, subject, rate, now)
    try:
        if cache.add(key, 1, timeout=rate.window + 1):
            count = 1
        else:
            try:
                count = cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, timeout=rate.window + 1)
                count = 1
    except Exception as exc:  # noqa: BLE001 - any cache failure: fail open
        log.warning("rate limit %s not counted: the cache failed (%s)", scope, type(exc).__name__)
        return None, None
    return (_retry_after(rate, now) if count > rate.limit else None), key


def reached(scope: str, subject: str, rate: Rate | None) -> int | None:
    """Without counting: the seconds until the window ends if ``subject`` has used up its limit, else None."""
    if rate is None:
        return None
    now = time.time()
    try:
        count = cache.get(_key(scope, subject, rate, now)) or 0
    except Exception as exc:  # noqa: BLE001 - any cache failure: fail open
        log.warning("rate limit %s not checked: the cache failed (%s)", scope, type(exc).__name__)
        return None
    return _retry_after(rate, now) if count >= rate.limit else None


def too_many_requests(request: HttpRequest, message: str, retry_after: int) -> HttpResponse:
    """429 with a message: JSON (``detail``) for the API or a JSON client, else a short HTML page."""
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse({"detail": message}, status=429)
    else:
        response = HttpResponse(
            f"<!doctype html><title>Too many requests</title><h1>Too many requests</h1><p>{escape(message)}</p>",
            status=429,
        )
    response["Retry-After"] = str(retry_after)
    return response


# ---------------------------------------------------------------- the join link


def join_limited(request: HttpRequest) -> int | None:
    """Count a join request from this address; the seconds to wait if it is over JOIN_RATE_LIMIT."""
    return hit("join", client_address(request), parse_rate(getattr(settings, "JOIN_RATE_LIMIT", "")))


# ---------------------------------------------------------------- password logins


def _login_rate() -> Rate | None:
    return parse_rate(getattr(settings, "LOGIN_RATE_LIMIT", ""))


def _username(value) -> str:
    return str(value or "").strip().lower()


def login_blocked(request: HttpRequest | None, username) -> int | None:
    """The seconds to wait if this address or this username has used up its failed logins, else None."""
    rate = _login_rate()
    if rate is None:
        return None
    waits = [reached("login-user", _username(username), rate)] if _username(username) else []
    if request is not None:
        waits.append(reached("login-address", client_address(request), rate))
    known = [w for w in waits if w is not None]
    return max(known) if known else None


def reserve_login_attempt(request: HttpRequest | None, username) -> int | None:
    """Count one password check against its username and address *before* it is made.

    The count is the cache's atomic ``incr`` (atomic in Redis across processes too), so of any number
    of simultaneous attempts at most LOGIN_RATE_LIMIT get a password check; the others are refused
    (the seconds to wait are returned). Counting after the check, as failures, let 30 simultaneous
    guesses through the gate before any was counted. A successful login gives its
    reservation back (``release_login_reservation``), so only failures use up the limit.
    """
    rate = _login_rate()
    if rate is None:
        return None
    subjects = [("login-user", _username(username))] if _username(username) else []
    if request is not None:
        subjects.append(("login-address", client_address(request)))
    waits: list[int] = []
    reserved: list[str] = []
    for scope, subject in subjects:
        wait, key = _hit_key(scope, subject, rate)
        if key is not None:
            reserved.append(key)
        if wait is not None:
            waits.append(wait)
    if request is not None:
        # Carried on the request to the login signal that gives it back (release_login_reservation).
        request._login_reservations = reserved  # type: ignore[attr-defined]
    return max(waits) if waits else None


@receiver(user_logged_in, dispatch_uid="clues_http.ratelimit.release_login_reservation")
def release_login_reservation(sender, request=None, user=None, **kwargs):
    """A password that was right does not count against the limit: give its reservation back."""
    for key in getattr(request, "_login_reservations", ()) if request is not None else ():
        try:
            cache.decr(key)
        except Exception:  # noqa: BLE001 - expired meanwhile, or the cache failed: nothing to give back
            pass
    if request is not None:
        request._login_reservations = []


LOGIN_BLOCKED = (
    "Too many failed logins from this address or for this user name. "
    "Please wait {minutes} minute(s) before trying again."
)


class LoginRateLimitMiddleware:
    """Answers 429 to a login form POST once its address or username has used up its failed logins."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if request.method == "POST" and request.path in getattr(settings, "LOGIN_RATE_LIMIT_PATHS", ()):
            wait = login_blocked(request, request.POST.get("username"))
            if wait is not None:
                return too_many_requests(request, LOGIN_BLOCKED.format(minutes=-(-wait // 60)), wait)
        response = self.get_response(request)
        wait = getattr(request, "_login_refused_wait", None)  # the backend refused the password check
        if wait is not None and request.path in getattr(settings, "LOGIN_RATE_LIMIT_PATHS", ()):
            return too_many_requests(request, LOGIN_BLOCKED.format(minutes=-(-wait // 60)), wait)
        return response


class LoginRateLimitBackend:
    """First in AUTHENTICATION_BACKENDS: reserves each password check, refusing it over the limit.

    It never authenticates anyone itself and has no ``get_user``, so sessions and
    ``Client.force_login`` keep using ModelBackend, which checks the password after it.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if password is None:
            return None  # not a password check
        wait = reserve_login_attempt(request, username)
        if wait is not None:
            if request is not None:
                request._login_refused_wait = wait  # the middleware answers 429 rather than "wrong password"
            raise PermissionDenied("too many failed logins")  # stops authenticate(): no other backend is tried
        return None
