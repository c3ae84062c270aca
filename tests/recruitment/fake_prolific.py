"""A fake Prolific API v1: a real HTTP server on 127.0.0.1, in a thread, for the tests.

It implements the endpoints recruitment.client calls, with the shapes and status names of
Prolific's reference (the same pages recruitment/client.py cites), and the rules the platform
relies on:
- a study is created as a draft (UNPUBLISHED) and PUBLISHed; after publishing only
  ``internal_name`` and ``total_available_places`` may change, and places only go up;
- completion codes: documented code types and actions only; ADD_TO_PARTICIPANT_GROUP needs an
  existing group; at most one FIXED_SCREEN_OUT_PAYMENT code, whose reward is below the study's and at least
  Prolific's minimum screen-out payment (14 US cents, 10 pence); once its ``slots`` screen-outs are used the
  study is PAUSED;
- a participant group needs a workspace (or organisation) id;
- a participant takes a place only while the study is ACTIVE, has a free place, is not in a
  blocklisted group and, where the study has a participant group allowlist (a later part of a
  multi-part study), is in one of its groups; a study's maximum time is at least its estimated time;
  a group's participants are listed (GET participant-groups/{id}/participants/); RETURNED, TIMED-OUT
  and REJECTED submissions give their place back;
- submitting a code runs its actions (add to the group, screen out with the fixed reward, or
  await review), whoever submits it: a participant who never opened the platform (``start_submission`` then
  ``submit``) is paid a screen-out code's fixed reward all the same; a submission is approved only from AWAITING
  REVIEW, rejected only from there with a message of at least 100 characters and a documented category, and a
  return may be requested (``POST submissions/{id}/request-return/`` with ``request_return_reasons``) of an ACTIVE
  or AWAITING REVIEW one; the participant then returns it (``participant_returns``), which frees the place;
- the bonus pay call is NOT idempotent (paying a bulk bonus twice pays twice), as documented.
Webhooks: a workspace secret, subscriptions confirmed with the X-Hook-Secret header, and
``event()`` building the signed request Prolific sends (a test may forge its secret, time or status).
Switches: ``down`` (connections are dropped without an answer), ``crash_on_pay`` (the pay is
recorded, then the connection drops: the client never learns it was paid), ``fail_next`` (with
``fail_status``: 400, 401 for a revoked token, 403, 500, 503...), ``fail_matching`` ((method, path pattern, status): the
next such request fails with that status), ``delays`` ((method, path pattern, seconds): such
a request waits that long before it is handled, as a slow Prolific would, so that a test can race two callers).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "fake-prolific-token"
WORKSPACE = "0123456789abcdef0000aaaa"
CODE_TYPES = {
    "COMPLETED",
    "FAILED_ATTENTION_CHECK",
    "FOLLOW_UP_STUDY",
    "GIVE_BONUS",
    "INCOMPATIBLE_DEVICE",
    "NO_CONSENT",
    "OTHER",
    "FIXED_SCREENOUT",
}
ACTIONS = {
    "AUTOMATICALLY_APPROVE",
    "ADD_TO_PARTICIPANT_GROUP",
    "REMOVE_FROM_PARTICIPANT_GROUP",
    "MANUALLY_REVIEW",
    "REQUEST_RETURN",
    "DYNAMIC_PAYMENT",
    "FIXED_SCREEN_OUT_PAYMENT",
}
FREES_PLACE = {"RETURNED", "TIMED-OUT", "REJECTED"}
# The least fixed screen-out reward Prolific accepts, in the account's smallest unit (its custom screening).
MIN_SCREEN_OUT = {"USD": 14, "GBP": 10}
REJECTION_CATEGORIES = {
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
}
REQUIRED = (
    "name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)


class Refused(Exception):
    """What Prolific's own web app would refuse a participant (no place, not eligible...)."""


class FakeProlific:
    def __init__(self, currency: str = "USD"):
        self.currency = currency
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.bulks: dict[str, dict] = {}
        self.payments: list[dict] = []  # one entry per bonus paid (a bulk paid twice pays twice)
        self.calls: list[tuple[str, str, dict | None]] = []
        self.down = False
        self.crash_on_pay = False
        self.fail_next = 0  # answer ``fail_status`` to this many requests (recorded in calls), then work again
        self.fail_status = 503
        self.delays: list[tuple[str, str, float]] = []  # (method, path regex, seconds) before a request is handled
        self.fail_matching: list[tuple[str, str, int]] = []  # (method, path regex, status): fails the next such request
        self.page_size = 2
        self.hook_secrets: dict[str, str] = {}  # workspace -> its one active secret
        self.subscriptions: dict[str, dict] = {}
        self._event_ids = itertools.count(1)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self, method):
                if fake.down:
                    self.close_connection = True
                    self.connection.close()
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                if self.headers.get("Authorization") != f"Token {TOKEN}":
                    return self._send(401, _error(401, "Invalid token."))
                fake.wait_if_slow(method, self.path)
                with fake._lock:
                    fake.calls.append((method, self.path, body))
                    failure = fake.canned_failure(method, self.path)
                    if failure:
                        status, payload = failure, _error(failure, "Refused by the fake")
                    else:
                        status, payload = fake.route(method, self.path, body)
                if status is None:  # crash after the work was done
                    self.close_connection = True
                    self.connection.close()
                    return
                headers = {}
                if isinstance(payload, tuple):  # (payload, extra headers)
                    payload, headers = payload
                self._send(status, payload, headers)

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode() if payload is not None else b""
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def canned_failure(self, method: str, path: str) -> int:
        """The status a switch makes this request fail with (``fail_matching``, then ``fail_next``), or 0."""
        matching = next((f for f in self.fail_matching if f[0] == method and re.search(f[1], path)), None)
        if matching is not None:
            self.fail_matching.remove(matching)
            return matching[2]
        if self.fail_next > 0:
            self.fail_next -= 1
            return self.fail_status
        return 0

    def wait_if_slow(self, method: str, path: str) -> None:
        """A request ``delays`` names waits before it is handled (outside the lock: others go on meanwhile)."""
        for slow_method, pattern, seconds in self.delays:
            if slow_method == method and re.search(pattern, path):
                time.sleep(seconds)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def new_id(self) -> str:
        return f"{next(self._ids):024x}"

    # ------------------------------------------------------------ what a participant does on Prolific

    def places_taken(self, study_id: str) -> int:
        return sum(1 for s in self.submissions.values() if s["study_id"] == study_id and s["status"] not in FREES_PLACE)

    def start_submission(self, study_id: str, pid: str, *, force: bool = False) -> str:
        """A participant takes a place: an ACTIVE submission; returns its id (the SESSION_ID).

        Refused as Prolific would: the study is not active, has no free place, the participant is in
        a blocklisted group, or already took part. ``force`` skips the checks (a forged link).
        """
        with self._lock:
            study = self.studies.get(study_id)
            if not force:
                if study is None or study["status"] != "ACTIVE":
                    raise Refused("the study is not active")
                for f in study.get("filters") or []:
                    if f["filter_id"] == "participant_group_blocklist" and any(
                        pid in self.groups[g]["participants"] for g in f["selected_values"]
                    ):
                        raise Refused("the participant is in a blocklisted group")
                    if f["filter_id"] == "participant_group_allowlist" and not any(
                        pid in self.groups[g]["participants"] for g in f["selected_values"]
                    ):
                        raise Refused("the participant is in no allowlisted group")
                if any(s["study_id"] == study_id and s["participant"] == pid for s in self.submissions.values()):
                    raise Refused("the participant already took part")
                if self.places_taken(study_id) >= study["total_available_places"]:
                    raise Refused("no place is free")
            sid = self.new_id()
            self.submissions[sid] = {
                "id": sid,
                "study_id": study_id,
                "participant": pid,
                "status": "ACTIVE",
                "entered_code": None,
            }
            return sid

    def submit(self, sid: str, code: str):
        """The participant comes back to Prolific with ``code``: the code's actions run."""
        with self._lock:
            sub = self.submissions[sid]
            study = self.studies.get(sub["study_id"], {})
            entry = next((c for c in study.get("completion_codes", []) if c["code"] == code), None)
            sub.update(entered_code=code, status="AWAITING REVIEW")
            for action in (entry or {}).get("actions", []):
                if action["action"] == "ADD_TO_PARTICIPANT_GROUP":
                    self.groups[action["participant_group"]]["participants"].add(sub["participant"])
                elif action["action"] == "FIXED_SCREEN_OUT_PAYMENT":
                    sub["status"] = "SCREENED OUT"
                    self.payments.append(
                        {
                            "bulk": None,
                            "participant": sub["participant"],
                            "amount": action["fixed_screen_out_reward"] / 100,
                            "screen_out": True,
                        }
                    )
                    screened = sum(
                        1
                        for s in self.submissions.values()
                        if s["study_id"] == sub["study_id"] and s["status"] == "SCREENED OUT"
                    )
                    if screened >= action["slots"] and study.get("status") == "ACTIVE":
                        study["status"] = "PAUSED"  # the screen-out slots are used up: the researcher looks

    def participant_returns(self, sid: str):
        """The participant returns their submission on Prolific (their own choice, or asked to): its place is free."""
        with self._lock:
            sub = self.submissions[sid]
            if sub["status"] not in ("RESERVED", "ACTIVE", "AWAITING REVIEW"):
                raise Refused(f"a {sub['status']} submission cannot be returned")
            sub["status"] = "RETURNED"

    def screen_out_paid(self, pid: str) -> float:
        """What Prolific paid the participant through fixed screen-out rewards."""
        return round(sum(p["amount"] for p in self.payments if p["participant"] == pid and p.get("screen_out")), 2)

    def code(self, sid: str, code_type: str = "COMPLETED") -> str:
        """The code of ``code_type`` of the study the submission is for (what a participant who earned it enters)."""
        study = self.studies[self.submissions[sid]["study_id"]]
        return next(c["code"] for c in study["completion_codes"] if c["code_type"] == code_type)

    def set_status(self, sid: str, status: str):
        self.submissions[sid]["status"] = status

    def event(
        self,
        sid: str,
        *,
        status: str | None = None,
        secret: str | None = None,
        timestamp: int | None = None,
        event_id: str | None = None,
    ) -> tuple[bytes, dict]:
        """The ``submission.status.change`` request Prolific sends to a confirmed subscription: (body, headers as
        the Django test client takes them). ``secret``, ``timestamp`` and ``status`` let a test forge it."""
        import base64
        import hashlib
        import hmac
        import time

        (workspace,) = {
            s["workspace_id"]
            for s in self.subscriptions.values()
            if s["is_enabled"] and s["event_type"] == "submission.status.change"
        }
        sub = self.submissions[sid]
        body = json.dumps(
            {
                "resource_id": sid,
                "event_type": "submission.status.change",
                "participant_id": sub["participant"],
                "status": status or sub["status"],
            }
        ).encode()
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        key = (secret if secret is not None else self.hook_secrets[workspace]).encode()
        signature = base64.b64encode(hmac.new(key, stamp.encode() + body, hashlib.sha256).digest()).decode()
        return body, {
            "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": signature,
            "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": stamp,
            "HTTP_X_EVENT_ID": event_id or f"evt-{next(self._event_ids)}",
        }

    def paid_total(self, pid: str) -> float:
        return round(sum(p["amount"] for p in self.payments if p["participant"] == pid and not p.get("screen_out")), 2)

    # ------------------------------------------------------------ routes

    def _list_row(self, s):  # the list shape (studies/{id}/submissions/) differs from the single one
        return {
            "id": s["id"],
            "participant_id": s["participant"],
            "status": s["status"],
            "study_code": s["entered_code"],
            "started_at": "2026-01-01T00:00:00Z",
            "completed_at": None,
        }

    def route(self, method: str, path: str, body):  # noqa: C901 (one branch per endpoint of the fake)
        path = path.split("?")[0].removeprefix("/api/v1/")
        if method == "GET" and path == "users/me/":
            return 200, {"id": "a" * 24, "currency_code": self.currency}
        if method == "POST" and path == "studies/":
            return self._create_study(body)
        if m := re.fullmatch(r"studies/(\w+)/transition/", path):
            study = self.studies.get(m[1])
            if study is None:
                return 404, _error(404, "Not found.")
            action = (body or {}).get("action")
            if action == "PUBLISH" and study["status"] == "UNPUBLISHED":
                study["status"] = "ACTIVE"
            elif action in ("PAUSE", "STOP", "START") and study["status"] != "UNPUBLISHED":
                study["status"] = {"PAUSE": "PAUSED", "STOP": "AWAITING REVIEW", "START": "ACTIVE"}[action]
            else:
                return 400, _error(400, f"cannot {action} a study that is {study['status']}")
            return 200, study
        if m := re.fullmatch(r"studies/(\w+)/submissions/(?:page(\d+)/)?", path):
            rows = [self._list_row(s) for s in self.submissions.values() if s["study_id"] == m[1]]
            return 200, self._page(rows, m[1], int(m[2] or 1))
        if m := re.fullmatch(r"studies/(\w+)/", path):
            study = self.studies.get(m[1])
            if study is None:
                return 404, _error(404, "Not found.")
            if method == "PATCH":
                return self._update_study(study, body or {})
            return 200, {**study, "places_taken": self.places_taken(m[1])}
        if m := re.fullmatch(r"submissions/(\w+)/transition/", path):
            sub = self.submissions.get(m[1])
            if sub is None:
                return 404, _error(404, "Not found.")
            action = (body or {}).get("action")
            if action == "APPROVE" and sub["status"] == "AWAITING REVIEW":
                sub["status"] = "APPROVED"
            elif (
                action == "REJECT"
                and sub["status"] == "AWAITING REVIEW"
                and len(body.get("message", "")) >= 100
                and body.get("rejection_category") in REJECTION_CATEGORIES
            ):
                sub["status"] = "REJECTED"
            else:
                return 400, _error(400, f"cannot {action} a submission that is {sub['status']}")
            return 200, sub
        if m := re.fullmatch(r"submissions/(\w+)/request-return/", path):
            # Asking a participant to return their submission (prolific-oss/cli: RequestSubmissionReturn): the
            # submission is marked, the participant decides; reasons are required.
            sub = self.submissions.get(m[1])
            if sub is None:
                return 404, _error(404, "Not found.")
            reasons = (body or {}).get("request_return_reasons")
            if not isinstance(reasons, list) or not reasons or not all(isinstance(r, str) and r for r in reasons):
                return 400, _error(400, {"request_return_reasons": ["This field is required."]})
            if sub["status"] not in ("ACTIVE", "AWAITING REVIEW"):
                return 400, _error(400, f"cannot request the return of a submission that is {sub['status']}")
            sub["return_requested"] = "2026-01-01T00:00:00Z"
            sub["return_reasons"] = list(reasons)
            return 200, {
                "id": sub["id"],
                "status": sub["status"],
                "participant": sub["participant"],
                "return_requested": sub["return_requested"],
            }
        if method == "POST" and path == "submissions/bonus-payments/":
            return self._set_up_bonuses(body or {})
        if m := re.fullmatch(r"submissions/(\w+)/", path):
            sub = self.submissions.get(m[1])
            return (200, dict(sub)) if sub else (404, _error(404, "Not found."))
        if m := re.fullmatch(r"participant-groups/(\w+)/participants/", path):
            # Prolific's "list the participants of a group" (GET /api/v1/participant-groups/{id}/participants/).
            group = self.groups.get(m[1])
            if group is None:
                return 404, _error(404, "Not found.")
            return 200, {"results": [{"participant_id": p} for p in sorted(group["participants"])]}
        if method == "POST" and path == "participant-groups/":
            if not (body or {}).get("name") or not (body.get("workspace_id") or body.get("organisation_id")):
                return 400, _error(400, "Either a workspace or organisation ID must be specified.")
            gid = self.new_id()
            self.groups[gid] = {
                "id": gid,
                "name": body["name"],
                "workspace_id": body.get("workspace_id"),
                "participants": set(),
            }
            return 201, {
                "id": gid,
                "name": body["name"],
                "workspace_id": body.get("workspace_id"),
                "participant_count": 0,
                "is_deleted": False,
            }
        if method == "POST" and path == "hooks/secrets/":
            workspace = (body or {}).get("workspace_id")
            if not workspace:
                return 400, _error(400, {"workspace_id": ["This field is required."]})
            self.hook_secrets[workspace] = secret = f"hook-secret-{self.new_id()}"
            return 201, {"id": self.new_id(), "value": secret, "workspace_id": workspace}
        if method == "POST" and path == "hooks/subscriptions/":
            body = body or {}
            if body.get("workspace_id") not in self.hook_secrets:
                return 400, _error(400, "create a secret for the workspace first")
            if not str(body.get("target_url", "")).startswith("https://") or not body.get("event_type"):
                return 400, _error(400, "target_url must use https:// and event_type is required")
            hid = self.new_id()
            self.subscriptions[hid] = {**body, "id": hid, "is_enabled": False, "confirm": f"confirm-{hid}"}
            row = {k: v for k, v in self.subscriptions[hid].items() if k != "confirm"}
            return 201, ({"results": [row]}, {"X-Hook-Secret": f"confirm-{hid}"})
        if m := re.fullmatch(r"hooks/subscriptions/(\w+)/", path):
            sub = self.subscriptions.get(m[1])
            if sub is None or method != "POST":
                return 404, _error(404, "Not found.")
            if (body or {}).get("secret") != sub["confirm"]:
                return 400, _error(400, "the secret does not match the X-Hook-Secret header")
            sub["is_enabled"] = True
            return 200, {k: v for k, v in sub.items() if k != "confirm"}
        if m := re.fullmatch(r"bulk-bonus-payments/(\w+)/pay/", path):
            bulk = self.bulks.get(m[1])
            if bulk is None:
                return 404, _error(404, "Not found.")
            for pid, amount in bulk["lines"]:  # not idempotent: every call pays
                self.payments.append({"bulk": m[1], "participant": pid, "amount": amount})
            if self.crash_on_pay:
                return None, None
            return 202, None
        return 404, _error(404, f"no route {method} {path}")

    def _create_study(self, body):  # noqa: C901 (one check per documented rule)
        body = body or {}
        missing = [k for k in REQUIRED if k not in body]
        if missing:
            return 400, _error(400, {k: ["This field is required."] for k in missing})
        problems = []
        if not isinstance(body["reward"], int) or body["reward"] < 1:
            problems.append("reward: an integer in the smallest currency unit")
        codes = body["completion_codes"]
        if len({c.get("code") for c in codes}) != len(codes):
            problems.append("completion_codes: each code must be unique within a study")
        screen_outs = 0
        for c in codes:
            if c.get("code_type") not in CODE_TYPES:
                problems.append(f"code_type {c.get('code_type')!r} is not valid")
            for a in c.get("actions", []):
                if a.get("action") not in ACTIONS:
                    problems.append(f"action {a.get('action')!r} is not valid")
                if a.get("action") == "ADD_TO_PARTICIPANT_GROUP" and a.get("participant_group") not in self.groups:
                    problems.append("participant_group: no such group")
                if a.get("action") == "FIXED_SCREEN_OUT_PAYMENT":
                    screen_outs += 1
                    reward = a.get("fixed_screen_out_reward")
                    if (
                        not isinstance(reward, int)
                        or not 0 < reward < body["reward"]
                        or not isinstance(a.get("slots"), int)
                        or a["slots"] < 1
                    ):
                        problems.append("fixed_screen_out_reward below the reward, and slots, are required")
                    elif reward < MIN_SCREEN_OUT[self.currency]:
                        problems.append(
                            f"fixed_screen_out_reward must be at least {MIN_SCREEN_OUT[self.currency]} "
                            f"({self.currency} smallest unit)"
                        )
        if screen_outs > 1:
            problems.append("only one completion code may pay a fixed screen-out")
        for f in body.get("filters") or []:
            if f.get("filter_id") in ("participant_group_blocklist", "participant_group_allowlist") and not set(
                f.get("selected_values", [])
            ) <= set(self.groups):
                problems.append(f"{f['filter_id']}: no such group")
        if body.get("estimated_completion_time", 0) < 1 or body.get("maximum_allowed_time", 0) < body.get(
            "estimated_completion_time", 0
        ):
            problems.append("maximum_allowed_time must be at least the estimated_completion_time")
        if problems:
            return 400, _error(400, problems)
        sid = self.new_id()
        self.studies[sid] = {**body, "id": sid, "status": "UNPUBLISHED", "currency_code": self.currency}
        return 201, self.studies[sid]

    def _update_study(self, study, body):
        if study["status"] != "UNPUBLISHED":
            other = set(body) - {"internal_name", "total_available_places"}
            if other:
                return 400, _error(400, f"cannot change {sorted(other)} once published")
        places = body.get("total_available_places")
        if places is not None and study["status"] != "UNPUBLISHED" and places < study["total_available_places"]:
            return 400, _error(400, "total_available_places can only be increased")
        study.update(body)
        if places is not None and study["status"] in ("AWAITING REVIEW", "COMPLETED"):
            study["status"] = "ACTIVE"  # more places re-open a study that had filled up
        return 200, study

    def _set_up_bonuses(self, body):
        study_id, csv = body.get("study_id"), body.get("csv_bonuses", "")
        lines = []
        for line in csv.splitlines():
            if not line.strip():
                continue
            pid, amount = line.split(",")
            if not any(s["study_id"] == study_id and s["participant"] == pid for s in self.submissions.values()):
                return 400, _error(400, f"{pid} did not take part in this study")
            lines.append((pid, float(Decimal(amount))))
        bid = self.new_id()
        self.bulks[bid] = {"id": bid, "study": study_id, "lines": lines}
        amount = round(sum(a for _, a in lines) * 100)
        return 201, {"id": bid, "study": study_id, "amount": amount, "fees": 0, "vat": 0, "total_amount": amount}

    def _page(self, rows, study_id, page):
        chunk = rows[(page - 1) * self.page_size : page * self.page_size]
        more = page * self.page_size < len(rows)
        nxt = f"{self.url}studies/{study_id}/submissions/page{page + 1}/" if more else None
        return {"results": chunk, "_links": {"next": {"href": nxt}}, "meta": {"count": len(rows)}}


def _error(status, detail):
    return {"error": {"status": status, "detail": detail}}
