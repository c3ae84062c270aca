"""A small client for Prolific's public API v1 (https://docs.prolific.com/api-reference), no Django.

Only the endpoints the platform uses. Every call has a timeout; idempotent calls (GET, and
PATCH of an absolute value) are retried a bounded number of times on a network error, a 429
or a 5xx; nothing that creates, approves or pays is ever retried (Prolific's pay call is not
idempotent: see annotation.recruitment for the ledger that guards it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx

DEFAULT_API_URL = "https://api.prolific.com/api/v1/"
# Submission statuses (Prolific's spelling).
RESERVED, ACTIVE, AWAITING_REVIEW = "RESERVED", "ACTIVE", "AWAITING REVIEW"
APPROVED, REJECTED, RETURNED, TIMED_OUT = "APPROVED", "REJECTED", "RETURNED", "TIMED-OUT"


class ProlificError(Exception):
    """Prolific answered with an error (``status`` is the HTTP status) or could not be reached."""

    def __init__(self, message: str, status: int | None = None):
        self.status = status
        super().__init__(message)


class ProlificUnreachable(ProlificError):
    """No answer: a network error or a timeout. For a non-idempotent call the outcome is unknown."""


class ProlificClient:
    def __init__(self, token: str, base_url: str = DEFAULT_API_URL, *, timeout: float = 10.0, retries: int = 2,
                 backoff: float = 0.5):
        if not token:
            raise ValueError("a Prolific API token is needed")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.retries, self.backoff = retries, backoff
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, follow_redirects=False,
                                  headers={"Authorization": f"Token {token}", "Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ transport

    def _request(self, method: str, path: str, *, json: dict | None = None, idempotent: bool = False):
        attempts = 1 + (self.retries if idempotent else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._http.request(method, path, json=json)
            except httpx.HTTPError as exc:  # connection refused, reset, timeout...
                if last:
                    raise ProlificUnreachable(f"Prolific could not be reached ({method} {path}: "
                                              f"{type(exc).__name__})") from None
            else:
                if response.status_code < 400:
                    return response.json() if response.content else {}
                if last or not (response.status_code == 429 or response.status_code >= 500):
                    raise ProlificError(f"Prolific answered {response.status_code} to {method} {path}: "
                                        f"{response.text[:300]}", response.status_code)
            time.sleep(self.backoff * (2 ** attempt))
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ studies

    def create_study(self, body: dict) -> dict:
        return self._request("POST", "studies/", json=body)

    def transition_study(self, study_id: str, action: str) -> dict:
        return self._request("POST", f"studies/{study_id}/transition/", json={"action": action})

    def set_places(self, study_id: str, places: int) -> dict:
        return self._request("PATCH", f"studies/{study_id}/", json={"total_available_places": places},
                             idempotent=True)

    def get_study(self, study_id: str) -> dict:
        return self._request("GET", f"studies/{study_id}/", idempotent=True)

    # ------------------------------------------------------------ participant groups

    def create_participant_group(self, name: str, workspace_id: str = "") -> dict:
        body = {"name": name, **({"workspace_id": workspace_id} if workspace_id else {})}
        return self._request("POST", "participant-groups/", json=body)

    # ------------------------------------------------------------ submissions

    def get_submission(self, submission_id: str) -> dict:
        return self._request("GET", f"submissions/{submission_id}/", idempotent=True)

    def study_submissions(self, study_id: str) -> Iterator[dict]:
        """Every submission of a study, all pages (following ``_links.next`` on the same API only)."""
        path: str | None = f"studies/{study_id}/submissions/"
        for _ in range(10_000):
            page = self._request("GET", path, idempotent=True)
            yield from page.get("results", [])
            href = ((page.get("_links") or {}).get("next") or {}).get("href")
            if not href:
                return
            if not href.startswith(self.base_url):
                raise ProlificError(f"Prolific's next page is outside the API: {href[:100]}")
            path = href[len(self.base_url):]

    def approve(self, submission_id: str) -> dict:
        return self._request("POST", f"submissions/{submission_id}/transition/", json={"action": "APPROVE"})

    # ------------------------------------------------------------ bonuses

    def set_up_bonuses(self, study_id: str, bonuses: list[tuple[str, str]]) -> dict:
        """``POST submissions/bonus-payments/``: (participant id, amount "1.23") lines; pays nothing yet."""
        csv = "\n".join(f"{pid},{amount}" for pid, amount in bonuses)
        return self._request("POST", "submissions/bonus-payments/", json={"study_id": study_id, "csv_bonuses": csv})

    def pay_bonuses(self, bulk_id: str) -> dict:
        """``POST bulk-bonus-payments/{id}/pay/``: pays. Not idempotent, never retried."""
        return self._request("POST", f"bulk-bonus-payments/{bulk_id}/pay/")
