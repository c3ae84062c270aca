"""Every call to Prolific and its outcome goes to the study's audit log."""

from __future__ import annotations

from annotation.models import AuditEvent, Enrollment, Study


def audit(study: Study, action: str, reason: str, enrollment: Enrollment | None = None, actor: str = "system") -> None:
    AuditEvent.objects.create(study=study, enrollment=enrollment, actor=actor, action=action[:40], reason=reason)
