"""A SONA-style participant pool, added the way docs/crowd_providers.md says: one provider class, registered
by the test that uses it (``crowd.register``), with settings of its own and a credit granted on finishing
through its ``on_finish`` hook; and a fake SONA (a real HTTP server on 127.0.0.1) that takes the grants.

SONA (sona-systems.com) runs university participant pools: a study's link carries the participant's
survey code (``%SURVEY_CODE%``), and a participant who finished is granted the study's course credit by a
GET of ``webstudy_credit.aspx`` with the study's experiment id, its credit token and the survey code (SONA's
"client-side completion" URL, called here from the server once the work is stored).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models, transaction

from crowd import Completion, CrowdProvider, Identity, InvalidIdentity, Outcome

SURVEY_CODE = re.compile(r"[0-9]{1,10}")


class SonaPool(CrowdProvider):
    slug = "sona"
    name = "SONA pool"
    refusal_help = "Please go back to the study's page in SONA."
    finish_note = " and your course credit is granted in SONA"
    screenout_note = " (and, if the study says so, your course credit)"
    offers_resume_code = True
    # The settings, declared once: fields that no model holds (the provider keeps them with the study).
    SETTINGS = (
        models.PositiveIntegerField(
            name="experiment_id",
            verbose_name="SONA experiment id",
            help_text="The study's id in SONA (its experiment_id).",
            validators=[MinValueValidator(1), MaxValueValidator(10**9)],
        ),
        models.CharField(
            name="credit_token",
            max_length=64,
            verbose_name="SONA credit token",
            help_text="The study's credit token in SONA (its client-side completion URL shows it).",
            validators=[RegexValidator(r"^[A-Za-z0-9]+\Z", "letters and digits only")],
        ),
        models.DecimalField(
            name="credits",
            max_digits=4,
            decimal_places=2,
            default=Decimal("1.00"),
            validators=[MinValueValidator(0), MaxValueValidator(10)],
            help_text="The course credit a participant is granted (as the study is set in SONA).",
        ),
        models.BooleanField(
            name="credit_screened_out",
            default=True,
            verbose_name="credit screened-out participants too",
            help_text="Grant the credit to a participant screened out after the training step.",
        ),
    )

    def __init__(self, sona_url: str):
        self.sona_url = sona_url.rstrip("/")
        self.screened_out: list[str] = []
        self.expired: list[str] = []

    def settings_fields(self):
        return self.SETTINGS

    def identity(self, params: Mapping[str, str], *, study, user: Any = None) -> Identity:
        code = self.need(params, "survey_code")
        if not SURVEY_CODE.fullmatch(code):
            raise InvalidIdentity("the survey_code parameter is not a SONA survey code (digits only)")
        return Identity(code)

    def join_query(self, study) -> str:
        return "?survey_code=%SURVEY_CODE%"

    def link_note(self, study) -> str:
        return "Paste into SONA as the study's URL (SONA fills in %SURVEY_CODE%)."

    def completion(self, code: str, *, data: Mapping[str, Any]) -> Completion:
        return Completion(code, return_to=self.name)

    def on_finish(self, enrollment, outcome: Outcome) -> None:
        self._grant_after_commit(enrollment)

    def on_filter(self, enrollment, outcome: Outcome) -> None:
        self.screened_out.append(enrollment.worker.external_id)
        if self.load_settings(enrollment.cohort.study)["credit_screened_out"]:
            self._grant_after_commit(enrollment)

    def on_expire(self, enrollment, outcome: Outcome) -> None:
        self.expired.append(enrollment.worker.external_id)

    def _grant_after_commit(self, enrollment) -> None:
        """The credit is granted once the work is stored: a rolled-back answer grants nothing."""
        settings = self.load_settings(enrollment.cohort.study)
        params = {
            "experiment_id": settings["experiment_id"],
            "credit_token": settings["credit_token"],
            "survey_code": enrollment.worker.external_id,
        }
        transaction.on_commit(
            lambda: httpx.get(f"{self.sona_url}/webstudy_credit.aspx", params=params, timeout=5).raise_for_status()
        )


class FakeSona:
    """SONA's credit URL on 127.0.0.1: each GET is a grant, kept in ``grants`` (experiment, token, survey code)."""

    def __init__(self):
        self.grants: list[tuple[str, str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path != "/webstudy_credit.aspx" or not {"experiment_id", "credit_token", "survey_code"} <= set(
                    query
                ):
                    self.send_response(404)
                    self.end_headers()
                    return
                fake.grants.append((query["experiment_id"], query["credit_token"], query["survey_code"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"credit granted")

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FakeSona:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
