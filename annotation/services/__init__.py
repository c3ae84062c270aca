"""Every operation of the annotation protocol (paper section 4) as a plain function.

Views, the API, management commands and tests call these; each rule of the protocol is
enforced here (or by a database constraint) and nowhere else. One module per sub-domain:

- ``studies``: create a study and its cohorts, launch and close them;
- ``joining``: the worker's identity from the join link, and enrollment (rules 1, 2);
- ``answering``: the items of each step, the current item, storing and revising answers (3, 5, 6);
- ``filtering``: the end of training (rule 4), filter / reinstate / withdraw / expire;
- ``payment``: completion codes, active time and pay (rule 7);
- ``hot_sql``: the worker's hot-path statements, written in SQL for speed.

Callers use the package (``from annotation import services; services.join(...)``).
"""

from ..answers import InvalidAnswer
from ..protocol import JoinRefused, TransitionNotAllowed, step_name
from .answering import (
    SubmitResult,
    WorkState,
    _item_at,
    _total,
    current_item,
    item_order,
    revise_last_test_answer,
    submit_answer,
)
from .errors import Conflict
from .filtering import (
    _STEP_OF_STATE,
    _expire_if_stale,
    _finish_training,
    _is_stale,
    _load,
    _require_reason,
    expire_stale,
    filter_enrollment,
    reinstate_enrollment,
    withdraw,
)
from .hot_sql import _answers_in_step, _fetch, _mark_served
from .joining import MTURK_PREVIEW, NOT_ALLOWED, JoinOutcome, _identity, join
from .payment import PROLIFIC_COMPLETE_URL, Completion, active_seconds, completion, pay
from .studies import (
    _study_defaults,
    close_cohort,
    close_study,
    create_study,
    data_errors,
    launch_cohorts,
    reopen_cohort,
)

__all__ = [
    "InvalidAnswer", "TransitionNotAllowed", "Conflict", "JoinRefused", "create_study", "data_errors", "launch_cohorts",
    "close_cohort", "reopen_cohort", "close_study", "join", "current_item", "submit_answer", "filter_enrollment",
    "reinstate_enrollment", "withdraw", "expire_stale", "completion", "item_order", "active_seconds", "pay",
    "step_name",
    "revise_last_test_answer",
]

# Also reachable as services.X (tests and older callers use them); not part of the public list above.
_REEXPORTED = (SubmitResult, WorkState, JoinOutcome, Completion, MTURK_PREVIEW, NOT_ALLOWED, PROLIFIC_COMPLETE_URL,
               launch_cohorts, _item_at, _total, _STEP_OF_STATE, _expire_if_stale, _finish_training, _is_stale, _load,
               _require_reason, _answers_in_step, _fetch, _mark_served, _identity, _study_defaults)
