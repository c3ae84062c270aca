"""A small client for Prolific's public API v1 (https://docs.prolific.com/api-reference), no Django.

Only the endpoints the platform uses; each method cites the reference page it follows (and, where
the reference page is thin, a public client built on the real API: Mephisto's
``mephisto/abstractions/providers/prolific/api/`` and Potato's ``potato/crowdsourcing/prolific_api.py``).
Every call has a timeout; idempotent calls (GET, and PATCH of an absolute value) are retried a
bounded number of times on a network error, a 429 or a 5xx; nothing that creates, approves or
pays is ever retried (Prolific's pay call is documented as not idempotent: see
``recruitment.bonuses`` for the ledger that guards it).

Money: ``reward``, ``fixed_screen_out_reward`` and the amounts Prolific returns are integers in
the smallest unit (pence / cents) of the account's currency (``currency_code`` of users/me);
the bonus CSV takes amounts in the major unit ("1.25"), as the set-up bonuses reference shows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx

DEFAULT_API_URL = "https://api.prolific.com/api/v1/"
# Submission statuses, spelled as Prolific spells them (with a space or a hyphen):
# https://docs.prolific.com/api-reference/submissions/submission-object
RESERVED, ACTIVE, AWAITING_REVIEW = "RESERVED", "ACTIVE", "AWAITING REVIEW"
APPROVED, REJECTED, RETURNED, TIMED_OUT = "APPROVED", "REJECTED", "RETURNED", "TIMED-OUT"
SCREENED_OUT, PARTIALLY_APPROVED = "SCREENED OUT", "PARTIALLY APPROVED"
# Statuses whose study place Prolific gives back by itself ("the study place becomes available
# for another participant"); every other submission keeps its place.
FREES_PROLIFIC_PLACE = frozenset({RETURNED, TIMED_OUT, REJECTED})
# Completion codes (the study object's ``completion_codes``): code types and actions.
# https://docs.prolific.com/api-reference/studies/the-study-object and create-study
CODE_COMPLETED, CODE_FIXED_SCREENOUT = "COMPLETED", "FIXED_SCREENOUT"
MANUALLY_REVIEW, ADD_TO_PARTICIPANT_GROUP = "MANUALLY_REVIEW", "ADD_TO_PARTICIPANT_GROUP"
FIXED_SCREEN_OUT_PAYMENT = "FIXED_SCREEN_OUT_PAYMENT"
# Webhooks: https://docs.prolific.com/api-reference/webhooks/subscribing (event types follow noun.verb).
SUBMISSION_STATUS_CHANGE = "submission.status.change"
# Filter ids (a study's ``filters``): https://docs.prolific.com/api-reference/participant-groups
PARTICIPANT_GROUP_BLOCKLIST = "participant_group_blocklist"
PARTICIPANT_GROUP_ALLOWLIST = "participant_group_allowlist"
# Prolific ids (studies, submissions, participants, groups) are 24 hexadecimal characters; a
# wider letters-and-digits check keeps anything that could change the request path out.
SAFE_ID = re.compile(r"[A-Za-z0-9]{1,64}\Z")


class ProlificError(Exception):
    """Prolific answered with an error (``status`` is the HTTP status) or could not be reached."""

    def __init__(self, message: str, status: int | None = None):
        self.status = status
        super().__init__(message)


class ProlificUnreachable(ProlificError):
    """No answer: a network error or a timeout. For a non-idempotent call the outcome is unknown."""


# An id in a request path, as error messages show it: messages reach the audit log, the dashboard and the logs,
# and a submission id is the participant's SESSION_ID.
_PATH_ID = re.compile(r"(?<=/)(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{8,64}(?=/)")


def _shown(path: str) -> str:
    return _PATH_ID.sub("{id}", path)


def _id(value: str) -> str:
    if not SAFE_ID.match(str(value)):
        raise ProlificError(f"not a Prolific id: {str(value)[:40]!r}")
    return str(value)


class ProlificClient:
    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_API_URL,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.5,
    ):
        if not token:
            raise ValueError("a Prolific API token is needed")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.retries, self.backoff = retries, backoff
        # Authentication: "Authorization: Token <token>" (https://docs.prolific.com/api-reference/introduction).
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            follow_redirects=False,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ transport

    def _request(
        self, method: str, path: str, *, json: dict | None = None, idempotent: bool = False, with_headers: bool = False
    ):
        attempts = 1 + (self.retries if idempotent else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._http.request(method, path, json=json)
            except httpx.HTTPError as exc:  # connection refused, reset, timeout...
                if last:
                    raise ProlificUnreachable(
                        f"Prolific could not be reached ({method} {_shown(path)}: {type(exc).__name__})"
                    ) from None
            else:
                if response.status_code < 400:
                    payload = response.json() if response.content else {}
                    return (payload, response.headers) if with_headers else payload
                if last or not (response.status_code == 429 or response.status_code >= 500):
                    raise ProlificError(
                        f"Prolific answered {response.status_code} to {method} {_shown(path)}: {response.text[:300]}",
                        response.status_code,
                    )
            time.sleep(self.backoff * (2**attempt))
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ account

    def me(self) -> dict:
        """``GET users/me/``: the account, with its ``currency_code`` (the currency of every reward).

        https://docs.prolific.com/documentation/get-started/your-first-data-collection (step 1);
        fields as in Mephisto's api/data_models/user.py (``currency_code``).
        """
        return self._request("GET", "users/me/", idempotent=True)

    # ------------------------------------------------------------ studies

    def create_study(self, body: dict) -> dict:
        """``POST studies/``: a draft study (201 with the study object); publishing is a separate call.

        https://docs.prolific.com/api-reference/studies/create-study
        """
        return self._request("POST", "studies/", json=body)

    def transition_study(self, study_id: str, action: str) -> dict:
        """``POST studies/{id}/transition/`` with ``{"action": "PUBLISH" | "START" | "PAUSE" | "STOP"}``.

        https://docs.prolific.com/api-reference/studies (draft, then publish); Mephisto api/studies.py
        ``publish`` and ``stop``.
        """
        return self._request("POST", f"studies/{_id(study_id)}/transition/", json={"action": action})

    def set_places(self, study_id: str, places: int) -> dict:
        """``PATCH studies/{id}/`` ``{"total_available_places": N}``: an absolute value, so repeating it is harmless.

        After publishing, Prolific accepts only ``internal_name`` and ``total_available_places``
        and only increases of the places (Mephisto docs: prolific_api_oddities.md; Potato
        ``increase_places``). https://docs.prolific.com/api-reference/studies/update-study
        """
        return self._request(
            "PATCH", f"studies/{_id(study_id)}/", json={"total_available_places": int(places)}, idempotent=True
        )

    def get_study(self, study_id: str) -> dict:
        """``GET studies/{id}/``: https://docs.prolific.com/api-reference/studies/get-study"""
        return self._request("GET", f"studies/{_id(study_id)}/", idempotent=True)

    # ------------------------------------------------------------ participant groups

    def create_participant_group(self, name: str, workspace_id: str) -> dict:
        """``POST participant-groups/`` ``{"name", "workspace_id"}`` (201, the group with its ``id``).

        "Either a workspace or organisation ID must be specified":
        https://docs.prolific.com/api-reference/participant-groups/create-participant-group
        """
        if not workspace_id:
            raise ValueError("a participant group needs a Prolific workspace id (PROLIFIC_WORKSPACE_ID)")
        return self._request("POST", "participant-groups/", json={"name": name, "workspace_id": workspace_id})

    # ------------------------------------------------------------ submissions

    def get_submission(self, submission_id: str) -> dict:
        """``GET submissions/{id}/`` (the id is the SESSION_ID): ``id``, ``study_id``, ``participant``,
        ``status``, ``entered_code``, ``started_at``, ``completed_at``.

        https://docs.prolific.com/api-reference/submissions/get-submission
        """
        return self._request("GET", f"submissions/{_id(submission_id)}/", idempotent=True)

    def study_submissions(self, study_id: str) -> Iterator[dict]:
        """``GET studies/{id}/submissions/``, every page: rows with ``id``, ``participant_id``, ``status``,
        ``study_code``, ``started_at``, ``completed_at`` (the list shape differs from the single one).

        https://docs.prolific.com/api-reference/studies/get-study-submissions; Mephisto
        api/data_models/submission.py (``ListSubmission``). Pages follow ``_links.next.href`` on
        the same API only.
        """
        path = f"studies/{_id(study_id)}/submissions/"
        for _ in range(10_000):
            page = self._request("GET", path, idempotent=True)
            yield from page.get("results", [])
            href = ((page.get("_links") or {}).get("next") or {}).get("href")
            if not href:
                return
            if not href.startswith(self.base_url):
                raise ProlificError(f"Prolific's next page is outside the API: {href[:100]}")
            path = href[len(self.base_url) :]

    def approve(self, submission_id: str) -> dict:
        """``POST submissions/{id}/transition/`` ``{"action": "APPROVE"}`` (only from AWAITING REVIEW).

        https://docs.prolific.com/api-reference/submissions/transition-submission. Prolific says the
        call is idempotent; it is still never retried here, and REJECT is never sent at all (a participant who did
        not earn their code is asked to return it instead: ``request_return``).
        """
        return self._request("POST", f"submissions/{_id(submission_id)}/transition/", json={"action": "APPROVE"})

    def request_return(self, submission_id: str, reasons: list[str]) -> dict:
        """``POST submissions/{id}/request-return/`` ``{"request_return_reasons": [...]}``: asks the participant to
        return their submission (they decide; a returned submission pays nothing, frees its place and does not count
        against them, unlike a rejection). Never retried here (the sync asks again next time if no answer came).

        Prolific's own client: prolific-oss/cli ``client.RequestSubmissionReturn`` (the submission, with its
        ``return_requested`` time); when to ask rather than reject: Prolific's researcher help, "Return vs. Reject".
        """
        return self._request(
            "POST", f"submissions/{_id(submission_id)}/request-return/", json={"request_return_reasons": list(reasons)}
        )

    # ------------------------------------------------------------ bonuses

    def set_up_bonuses(self, study_id: str, bonuses: list[tuple[str, str]]) -> dict:
        """``POST submissions/bonus-payments/`` ``{"study_id", "csv_bonuses": "<participant_id>,<amount>\\n..."}``.

        Pays nothing yet; answers 201 with the bulk payment (``id``, ``study``, ``amount``, ``fees``,
        ``total_amount``, in the smallest unit). https://docs.prolific.com/api-reference/bonuses/create-bonus-payments
        """
        csv = "".join(f"{_id(pid)},{amount}\n" for pid, amount in bonuses)
        return self._request(
            "POST", "submissions/bonus-payments/", json={"study_id": _id(study_id), "csv_bonuses": csv}
        )

    def pay_bonuses(self, bulk_id: str) -> dict:
        """``POST bulk-bonus-payments/{id}/pay/``: pays (202, asynchronously). Documented as **not
        idempotent**: never retried. https://docs.prolific.com/api-reference/bonuses/pay-bonus-payments
        """
        return self._request("POST", f"bulk-bonus-payments/{_id(bulk_id)}/pay/")

    # ------------------------------------------------------------ webhooks

    def create_hook_secret(self, workspace_id: str) -> dict:
        """``POST hooks/secrets/`` ``{"workspace_id"}``: the workspace's one active secret (it replaces the last),
        in the answer's ``value``. https://docs.prolific.com/api-reference/webhooks/subscribing
        ("Creating a secret") and .../webhooks/create-secret.
        """
        return self._request("POST", "hooks/secrets/", json={"workspace_id": _id(workspace_id)})

    def create_hook_subscription(self, *, event_type: str, target_url: str, workspace_id: str) -> tuple[dict, str]:
        """``POST hooks/subscriptions/`` ``{"workspace_id", "event_type", "target_url"}`` (an https URL): the
        subscription (``id``) and the ``X-Hook-Secret`` header to confirm it with.
        https://docs.prolific.com/api-reference/webhooks/create-subscription
        """
        body, headers = self._request(
            "POST",
            "hooks/subscriptions/",
            with_headers=True,
            json={"workspace_id": _id(workspace_id), "event_type": event_type, "target_url": target_url},
        )
        if isinstance(body.get("results"), list) and body["results"]:
            body = body["results"][0]
        return body, headers.get("X-Hook-Secret", "")

    def confirm_hook_subscription(self, subscription_id: str, hook_secret: str) -> dict:
        """``POST hooks/subscriptions/{id}/`` ``{"secret": <X-Hook-Secret>}``: confirms the intention to subscribe.
        https://docs.prolific.com/api-reference/webhooks/confirm-subscription
        """
        return self._request("POST", f"hooks/subscriptions/{_id(subscription_id)}/", json={"secret": hook_secret})
