"""Prolific as a crowd provider with its API: the link provider of ``crowd.prolific`` plus this app's side.

Registered in place of the plain one (``RecruitmentConfig.ready``): the protocol asks it, through the
registry, to vouch for a join (``verify_join``: the submission checked on Prolific) and tells it when a
place is freed (``on_filter``, ``on_expire``, ``on_withdraw``: the place is given back to the cohort's
Prolific study after the commit). A finished worker submits the code on Prolific only after finishing
here, so ``on_finish`` has nothing to tell Prolific yet: the submission is approved when Prolific reports
it awaiting review with the completion code of an enrollment that finished (the sync or a webhook,
``sync.reconcile_submission``). The study's Prolific settings (manual review) are kept in
``ProlificStudy``; the service fee comes from ``PROLIFIC_SERVICE_FEE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models, transaction

from crowd import Identity, Outcome
from crowd.prolific import Prolific

from . import client, records, sync, tasks
from .models import ProlificCohort, ProlificStudy
from .publish import REACH_MINUTES
from .tokens import NO_TOKEN, owner_has_token


class ProlificProvider(Prolific):
    study_page = "dashboard-prolific"
    configuration_help = "No Prolific token is configured (PROLIFIC_API_TOKEN)"

    # ---------------------------------------------------------------- settings, configuration, fee

    def settings_fields(self) -> Sequence[models.Field]:
        return [ProlificStudy._meta.get_field("manual_review")]

    def load_settings(self, study: Any) -> dict[str, Any]:
        row = ProlificStudy.objects.filter(study_id=study.pk).first() if study.pk else None
        return {f.name: getattr(row, f.attname) if row else f.get_default() for f in self.settings_fields()}

    def save_settings(self, study: Any, settings: Mapping[str, Any]) -> None:
        ProlificStudy.objects.update_or_create(study=study, defaults=dict(settings))

    def is_configured(self, *, owner: Any = None) -> bool:
        return owner_has_token(getattr(owner, "pk", None))

    def launch_note(self, study: Any) -> str:
        if not owner_has_token(study.created_by_id):
            return (
                f"until it is published on Prolific its join links run as plain links: Prolific ids are not checked "
                f"with Prolific and nobody is paid through Prolific by this platform ({NO_TOKEN}, then publish it from "
                "the study's Prolific page)."
            )
        return "publish it on Prolific (the study's Prolific page): its join links take no one until then."

    def listed_parts(self, cohort: Any) -> dict[int, tuple[int, Any]]:
        return {
            number: (part.minutes, (Decimal(part.reward) / 100).quantize(Decimal("0.01")))
            for number, part in records.published_parts(cohort).items()
            if part.minutes is not None and part.reward is not None
        }

    def listed_time_limit(self, cohort: Any, part: int) -> int | None:
        published = records.published_parts(cohort).get(part)
        if published is None or published.maximum_minutes is None:
            return None
        return published.maximum_minutes - REACH_MINUTES

    def not_open_reason(self, cohort: Any) -> str:
        # With a token the researcher can publish: a cohort not on Prolific yet takes no one (no PID could be checked).
        if not owner_has_token(cohort.study.created_by_id) or records.study_id_of(cohort):
            return ""
        return "this study is not open on Prolific yet; please come back once it is published there"

    def link_status_note(self, cohort: Any) -> str:
        if records.study_id_of(cohort):
            return ""
        return "A plain link until published on Prolific: Prolific ids unchecked, nobody paid through Prolific."

    def service_fee(self) -> float:
        return float(settings.PROLIFIC_SERVICE_FEE)

    # ---------------------------------------------------------------- parts

    def part_of_session(self, cohort: Any, identity: Identity) -> int:
        return records.part_studies(cohort).get(str(identity.data.get("STUDY_ID") or ""), 0)

    def reinstate_refusal(self, enrollment: Any) -> str:
        """Refused once the part's submission was submitted on Prolific (as last seen: with the screen-out code, final
        there) or returned by the participant. Taken back here, the worker could never submit the part's completion
        code, and the bonus for the time of a screened-out part pays only a worker still filtered. A timed-out one is
        taken back, as the sync keeps a timed-out worker within their limit here: Prolific lets them still complete."""
        status = records.status_of(enrollment)
        if status in ("", client.RESERVED, client.ACTIVE, client.TIMED_OUT):
            return ""
        return (
            f"their submission of part {enrollment.part} is {status} on Prolific: taken back here, they could not "
            "submit its completion code nor be paid for the rest of it"
        )

    def may_start_part(self, enrollment: Any, part: int) -> bool:
        """Only from the part's own Prolific study: the enrollment's session is one Prolific confirmed (its STUDY_ID
        is the submission's own study, ``sync.verify_join``) and is of that part's study."""
        studies = {number: sid for sid, number in records.part_studies(enrollment.cohort).items()}
        if part not in studies:
            return True
        return (
            enrollment.verification == enrollment.VERIFIED
            and (enrollment.platform_data or {}).get("STUDY_ID") == studies[part]
        )

    # ---------------------------------------------------------------- the protocol's events

    def verify_join(self, cohort: Any, identity: Identity, *, returning: bool = False) -> str:
        return sync.verify_join(cohort, identity.external_id, identity.data, returning=returning)

    def on_filter(self, enrollment: Any, outcome: Outcome) -> None:
        self._give_back_place(enrollment)

    def on_expire(self, enrollment: Any, outcome: Outcome) -> None:
        self._give_back_place(enrollment)

    def on_withdraw(self, enrollment: Any, outcome: Outcome) -> None:
        self._give_back_place(enrollment)

    def _give_back_place(self, enrollment: Any) -> None:
        """A place freed here goes back to the cohort's Prolific study, queued once the transaction commits.

        Without a broker the task runs eagerly (inside the request that freed the place); the periodic
        sync gives the same places back if the task cannot.
        """
        cohort_id = enrollment.cohort_id
        if not ProlificCohort.objects.filter(cohort_id=cohort_id).exclude(prolific_study_id="").exists():
            return
        transaction.on_commit(lambda: tasks.give_back_places.delay(cohort_id), robust=True)
