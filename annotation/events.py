"""What the protocol tells the rest of the platform, as Django signals.

The protocol core knows no crowd platform: an app that recruits somewhere (``recruitment`` for
Prolific) connects receivers here in its ``AppConfig.ready``. Receivers run inside the protocol's
transaction; work that calls out (HTTP) belongs in ``transaction.on_commit``.
"""

from django.dispatch import Signal

#: An enrollment left one of its cohort's slots (rule 2: filtered, withdrawn or expired), saved and
#: audited in the open transaction. ``send(sender=Enrollment, enrollment=...)``.
place_freed = Signal()

#: A worker is about to join a cohort: ``send(sender=Cohort, cohort=..., identity=crowd.Identity,
#: returning=bool)``, before any lock is taken (``returning``: the worker already has an enrollment in the
#: cohort and comes back from another browser; only a "verified" answer lets them back in). A receiver may
#: refuse the join by raising ``protocol.JoinRefused``, or return how the platform vouched for it:
#: "verified", "unverified" (the platform could not be asked; the enrollment stays out of every result until
#: verified) or "" (not checked).
verify_join = Signal()
