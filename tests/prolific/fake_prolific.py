"""A fake Prolific API v1: a real HTTP server on 127.0.0.1, in a thread, for the tests.

It implements exactly the endpoints annotation.prolific calls, with Prolific's JSON shapes and
status names; the pay call is NOT idempotent (paying a bulk bonus twice pays twice), as on
Prolific. Switches: ``down`` (connections are dropped without an answer), ``crash_on_pay``
(the pay is recorded, then the connection drops: the client never learns it was paid).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "fake-prolific-token"


class FakeProlific:
    def __init__(self):
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.bulks: dict[str, dict] = {}
        self.payments: list[dict] = []  # one entry per bonus paid (a bulk paid twice pays twice)
        self.calls: list[tuple[str, str, dict | None]] = []
        self.down = False
        self.crash_on_pay = False
        self.fail_next = 0  # answer 503 to this many requests (recorded in calls), then work again
        self.page_size = 2
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
                    return self._send(401, {"error": {"detail": "Invalid token"}})
                with fake._lock:
                    fake.calls.append((method, self.path, body))
                    if fake.fail_next > 0:
                        fake.fail_next -= 1
                        status, payload = 503, {"error": {"detail": "Service unavailable"}}
                    else:
                        status, payload = fake.route(method, self.path, body)
                if status is None:  # crash after the work was done
                    self.close_connection = True
                    self.connection.close()
                    return
                self._send(status, payload)

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
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

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def new_id(self) -> str:
        return f"{next(self._ids):024x}"

    # ------------------------------------------------------------ what a participant does on Prolific

    def start_submission(self, study_id: str, pid: str) -> str:
        """A participant takes a place: an ACTIVE submission; returns its id (the SESSION_ID)."""
        sid = self.new_id()
        self.submissions[sid] = {"id": sid, "study_id": study_id, "participant": pid, "status": "ACTIVE",
                                 "study_code": None}
        return sid

    def submit(self, sid: str, code: str):
        self.submissions[sid].update(status="AWAITING REVIEW", study_code=code)

    def set_status(self, sid: str, status: str):
        self.submissions[sid]["status"] = status

    def paid_total(self, pid: str) -> float:
        return round(sum(p["amount"] for p in self.payments if p["participant"] == pid), 2)

    # ------------------------------------------------------------ routes

    def _rows(self, study_id):
        return [{"id": s["id"], "participant_id": s["participant"], "status": s["status"],
                 "study_code": s["study_code"]} for s in self.submissions.values() if s["study_id"] == study_id]

    def route(self, method: str, path: str, body):  # noqa: C901 (one branch per endpoint of the fake)
        path = path.split("?")[0].removeprefix("/api/v1/")
        if method == "POST" and path == "studies/":
            missing = [k for k in ("name", "description", "external_study_url", "total_available_places",
                                   "estimated_completion_time", "reward", "completion_codes") if k not in body]
            if missing:
                return 400, {"error": {"detail": {k: ["This field is required."] for k in missing}}}
            sid = self.new_id()
            self.studies[sid] = {**body, "id": sid, "status": "UNPUBLISHED"}
            return 201, self.studies[sid]
        if m := re.fullmatch(r"studies/(\w+)/transition/", path):
            study = self.studies.get(m[1])
            if study is None:
                return 404, {"error": {"detail": "Not found."}}
            study["status"] = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE", "STOP": "COMPLETED"}[
                body["action"]]
            return 200, study
        if m := re.fullmatch(r"studies/(\w+)/submissions/", path):
            return 200, self._page(self._rows(m[1]), m[1], 1)
        if m := re.fullmatch(r"studies/(\w+)/submissions/page(\d+)/", path):
            return 200, self._page(self._rows(m[1]), m[1], int(m[2]))
        if m := re.fullmatch(r"studies/(\w+)/", path):
            study = self.studies.get(m[1])
            if study is None:
                return 404, {"error": {"detail": "Not found."}}
            if method == "PATCH":
                study.update(body)
            return 200, study
        if m := re.fullmatch(r"submissions/(\w+)/transition/", path):
            sub = self.submissions.get(m[1])
            if sub is None:
                return 404, {"error": {"detail": "Not found."}}
            if body.get("action") == "APPROVE":
                if sub["status"] != "AWAITING REVIEW":
                    return 400, {"error": {"detail": f"cannot approve a submission that is {sub['status']}"}}
                sub["status"] = "APPROVED"
            elif body.get("action") == "REJECT":
                sub["status"] = "REJECTED"
            return 200, sub
        if method == "POST" and path == "submissions/bonus-payments/":
            bid = self.new_id()
            lines = [line.split(",") for line in body["csv_bonuses"].splitlines() if line.strip()]
            self.bulks[bid] = {"id": bid, "study": body["study_id"], "lines": [(p, float(a)) for p, a in lines]}
            amount = sum(a for _, a in self.bulks[bid]["lines"])
            return 201, {"id": bid, "study": body["study_id"], "amount": amount, "fees": 0, "total_amount": amount}
        if m := re.fullmatch(r"submissions/(\w+)/", path):
            sub = self.submissions.get(m[1])
            return (200, sub) if sub else (404, {"error": {"detail": "Not found."}})
        if method == "POST" and path == "participant-groups/":
            gid = self.new_id()
            self.groups[gid] = {"id": gid, "name": body["name"], "participant_ids": []}
            return 201, self.groups[gid]
        if m := re.fullmatch(r"bulk-bonus-payments/(\w+)/pay/", path):
            bulk = self.bulks.get(m[1])
            if bulk is None:
                return 404, {"error": {"detail": "Not found."}}
            for pid, amount in bulk["lines"]:  # not idempotent: every call pays
                self.payments.append({"bulk": m[1], "participant": pid, "amount": amount})
            if self.crash_on_pay:
                return None, None
            return 202, {}
        return 404, {"error": {"detail": f"no route {method} {path}"}}

    def _page(self, rows, study_id, page):
        chunk = rows[(page - 1) * self.page_size: page * self.page_size]
        more = page * self.page_size < len(rows)
        nxt = f"{self.url}studies/{study_id}/submissions/page{page + 1}/" if more else None
        return {"results": chunk, "_links": {"next": {"href": nxt}}, "meta": {"count": len(rows)}}
