"""Every operation of the annotation protocol (paper section 4) as a keyword-only function.

Views, the API, management commands and tests call these; each rule of the protocol is
enforced here (or by a database constraint) and nowhere else. One module per sub-domain:

- ``studies``: create a study and its cohorts, launch, close and re-open them;
- ``joining``: the worker's identity from the join link (the study's crowd provider), and enrollment (rules 1, 2);
- ``answering``: the items of each step, the current item, storing and revising answers (3, 5, 6), each
  item addressed by its handle (``annotation.handles``), never its database id;
- ``filtering``: the end of training (rule 4), filter / reinstate / withdraw / expire;
- ``completion``: the code a finished or filtered worker gets;
- ``hot_sql``: the worker's hot-path statements, written in SQL for speed (``hot_paths``: chosen by name).

Callers use the package (``from annotation import services; services.join(token=..., params=...)``);
the names below are its whole public surface.
"""

from ..answers import InvalidAnswer
from ..handles import is_handle_of as is_item_handle
from ..handles import item_handle
from ..protocol import JoinRefused, TransitionNotAllowed
from .answering import (
    LastAnswer,
    SubmitResult,
    WorkState,
    current_item,
    item_order,
    last_test_answer,
    part_bounds,
    revisable_test_answer,
    revise_last_test_answer,
    start_next_part,
    submit_answer,
)
from .completion import completion
from .errors import Conflict, NotCurrentItem, TimeUp
from .filtering import (
    ENDED_UNANSWERED,
    end_now_seconds,
    end_now_window,
    expire_if_stale,
    expire_stale,
    filter_enrollment,
    leave_out_of_results,
    part_deadline,
    put_back_in_results,
    reinstate_enrollment,
    stop_part,
    withdraw,
)
from .joining import NOT_ALLOWED, RESUME_PARAM, JoinOutcome, join
from .studies import close_cohort, close_study, create_study, data_errors, launch_cohorts, reopen_cohort

__all__ = [
    # errors
    "Conflict",
    "NotCurrentItem",
    "TimeUp",
    "InvalidAnswer",
    "JoinRefused",
    "TransitionNotAllowed",
    # studies and cohorts
    "create_study",
    "data_errors",
    "launch_cohorts",
    "close_cohort",
    "reopen_cohort",
    "close_study",
    # workers
    "join",
    "JoinOutcome",
    "NOT_ALLOWED",
    "RESUME_PARAM",
    "current_item",
    "WorkState",
    "item_order",
    "submit_answer",
    "SubmitResult",
    "revise_last_test_answer",
    "last_test_answer",
    "revisable_test_answer",
    "LastAnswer",
    "completion",
    "start_next_part",
    "part_bounds",
    "part_deadline",
    "end_now_seconds",
    "end_now_window",
    "ENDED_UNANSWERED",
    "stop_part",
    "item_handle",
    "is_item_handle",
    # researchers' actions and the clock
    "filter_enrollment",
    "reinstate_enrollment",
    "leave_out_of_results",
    "put_back_in_results",
    "withdraw",
    "expire_if_stale",
    "expire_stale",
]
