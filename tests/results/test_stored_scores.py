"""Each cohort's scores are stored in the database (``results.scores``): a cache flush or a new request reads them
back and scores no answer again, and a stored row is never stale, whatever changes what the results read: a new
answer, a revision, a worker completing, filtered, withdrawn (in the test step or between parts), expired, left
out or counted in again by a researcher (a verification by the crowd platform: tests/recruitment/test_prolific.py).
After each change, every stored row that says it is current is compared with the scores the answers give then
(``tests/results/stored.py``)."""

from __future__ import annotations

import json
import re
import shutil
import zipfile

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation import services
from annotation.models import Answer, Enrollment, Study
from annotation.protocol import RETURN_DAYS
from results import scores
from results.cache import VERSION
from results.models import StoredScores
from tasks_data.importer import import_release
from tasks_data.models import Example, TrainingSetItem
from tasks_data.s1 import MRC_GOLD
from tests.annotation.factories import cohort, complete, gold_answer, join, make_study, trim_test_set, wrong_answer
from tests.conftest import release_path
from tests.results.stored import changes, check_stored, current_rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]


def _client(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def _cells(client, study) -> dict[int, dict]:
    """{shots: human cell} as the results API gives them to a researcher."""
    response = client.get(f"/api/studies/{study.pk}/results/")
    assert response.status_code == 200
    return {c["shots"]: c for c in response.json()["cells"]}


def _answer(enrollment, count: int | None = None, *, wrong_training=(), clock=None, pace: float = 0) -> Enrollment:
    """Answer ``count`` items (None: every item, every part) through the services, the gold but at the given
    training positions; ``pace`` seconds on ``clock`` before each answer."""
    answered = 0
    while count is None or answered < count:
        state = services.current_item(enrollment_id=enrollment.pk)
        if state.item is None:
            enrollment.refresh_from_db()
            if count is None and enrollment.state == Enrollment.State.BETWEEN:
                services.start_next_part(enrollment_id=enrollment.pk)
                continue
            break
        if clock is not None:
            clock.advance(pace)
        wrong = state.step == "training" and state.done in wrong_training
        choose = wrong_answer if wrong else gold_answer
        services.submit_answer(enrollment_id=enrollment.pk, item=state.item_handle, answer=choose(state.item))
        answered += 1
    enrollment.refresh_from_db()
    return enrollment


def _scores(study) -> dict:
    """What a new request reads (a new Study object: nothing memoised)."""
    return scores.study_scores(Study.objects.get(pk=study.pk))


def test_every_change_to_what_the_results_read_leaves_no_stored_row_stale(researcher):
    trim_test_set("sst2", 6)
    study = make_study(
        tasks=["sst2"],
        shots=[0, 10],
        created_by=researcher,
        filter_floor=0.5,
        filter_fraction=None,
        workers_per_cohort=6,
    )
    zero, ten = cohort(study, "sst2", 0), cohort(study, "sst2", 10)
    training = TrainingSetItem.objects.filter(training_set_id=ten.training_set_id).count()
    a = complete(ten, "A")
    complete(ten, "B", wrong_test={1})
    client = _client(researcher)
    assert _cells(client, study)[10]["n"] == 2
    assert check_stored(study) == {zero.pk, ten.pk}

    # A worker's new answers, in the training and the test step, count nowhere yet: nothing is stale.
    before = changes(ten)
    c = _answer(join(ten, "C"), training + 3)
    assert c.state == Enrollment.State.TESTING and changes(ten) == before
    assert check_stored(study) == {zero.pk, ten.pk}
    # They change their last test answer (right to wrong) while still in the step: nothing is stale either.
    last = Answer.objects.filter(enrollment=c, step=Answer.Step.TEST).order_by("-position").first()
    services.revise_last_test_answer(
        enrollment_id=c.pk,
        item=services.item_handle(enrollment_id=c.pk, item_id=last.example_id),
        answer=wrong_answer(last.example),
    )
    assert changes(ten) == before and check_stored(study) == {zero.pk, ten.pk}
    # They complete: the cohort's stored scores say they are stale at once, and the next read shows them, with
    # the revised answer.
    c = _answer(c)
    assert c.state == Enrollment.State.COMPLETED and changes(ten) == before + 1
    assert check_stored(study) == {zero.pk}
    assert _cells(client, study)[10]["n"] == 3
    assert check_stored(study) == {zero.pk, ten.pk}
    stored = _scores(study)[ten.pk]
    assert stored.matrix()[stored.annotators.index(c.pk), stored.example_ids.index(last.example_id)] == 0.0

    # Filtered after the training step, withdrawn in the test step: never counted, nothing is stale.
    d = _answer(join(ten, "D"), training, wrong_training=range(training))
    assert d.state == Enrollment.State.FILTERED and changes(ten) == before + 1
    e = _answer(join(zero, "E"), 2)
    services.withdraw(enrollment_id=e.pk, actor="worker", reason="had to go")
    assert check_stored(study) == {zero.pk, ten.pk}

    # Left out by the researcher, then counted in again (the API): stale at once each time, right on the next read.
    for action, n in (("leave-out", 2), ("put-back", 3)):
        url = f"/api/enrollments/{a.pk}/{action}/"
        assert client.post(url, {"reason": "checking"}, content_type="application/json").status_code == 200
        assert check_stored(study) == {zero.pk}, action
        assert _cells(client, study)[10]["n"] == n
        assert check_stored(study) == {zero.pk, ten.pk}


def test_workers_between_parts_change_the_planned_time_and_no_stored_row_misses_it(researcher, clock):
    """The planner's time per item is measured once three workers finished a part (``annotation.estimates``): a
    worker between parts, withdrawn from there or expired there changes the stored scores' estimate."""
    trim_test_set("sst2", 150)
    study = make_study(
        tasks=["sst2"],
        shots=[0],
        created_by=researcher,
        platform="generic",
        worker_id_param="worker_id",
        sitting_minutes=10,  # 75 items of 8 s a sitting: 2 parts
        workers_per_cohort=4,
        filter_floor=None,
        filter_fraction=None,
    )
    zero = cohort(study, "sst2", 0)
    client = _client(researcher)

    def arrive(name):
        return services.join(token=zero.join_token, params={"worker_id": name}).enrollment

    assert _answer(arrive("A"), clock=clock, pace=5).state == Enrollment.State.COMPLETED
    assert _cells(client, study)[0]["n"] == 1
    planned = _scores(study)[zero.pk].estimate
    b, c = (_answer(arrive(name), 75, clock=clock, pace=5) for name in ("B", "C"))
    assert b.state == c.state == Enrollment.State.BETWEEN
    assert check_stored(study) == set()
    assert _cells(client, study)[0]["n"] == 1  # between parts: not counted, but measured
    measured = _scores(study)[zero.pk].estimate
    assert measured.seconds_per_item == pytest.approx(5) and planned.seconds_per_item != pytest.approx(5)
    assert check_stored(study) == {zero.pk}

    services.withdraw(enrollment_id=b.pk, actor="worker", reason="moved on")
    assert check_stored(study) == set()
    assert _scores(study)[zero.pk].estimate == measured  # B finished part 1: their pace still counts
    assert check_stored(study) == {zero.pk}

    # D answers a few items slowly and is cut off by part 1's limit (in the test step, a state no result reads):
    # the timing kept for them moves the measured pace, and the kept row says so.
    d = _answer(arrive("D"), 3, clock=clock, pace=60)
    clock.advance(d.timer_minutes * 60)
    assert services.current_item(enrollment_id=d.pk).step == "expired"
    assert check_stored(study) == set()
    assert _scores(study)[zero.pk].estimate.seconds_per_item > measured.seconds_per_item
    assert check_stored(study) == {zero.pk}

    clock.advance((RETURN_DAYS + 1) * 24 * 3600)  # C never comes back for part 2
    assert services.expire_stale() == 1
    assert check_stored(study) == set()
    _scores(study)
    assert check_stored(study) == {zero.pk}


@pytest.fixture
def ten(researcher):
    trim_test_set("sst2", 6)
    study = make_study(
        tasks=["sst2"], shots=[10], created_by=researcher, filter_floor=None, filter_fraction=None, workers_per_cohort=5
    )
    ten = cohort(study, "sst2", 10)
    complete(ten, "A")
    complete(ten, "B", wrong_test={0, 1})
    complete(ten, "C", wrong_test={1, 2, 3})
    return ten


def _page(client, study) -> str:
    """The results page, less its CSRF tokens (new on each request)."""
    html = client.get(f"/dashboard/studies/{study.pk}/results/").content.decode()
    return re.sub(r"[A-Za-z0-9]{64}", "", html)


def test_a_cache_flush_and_a_new_request_read_the_stored_scores_and_score_no_answer_again(ten, researcher):
    study, client = ten.study, _client(researcher)
    urls = [f"/api/studies/{study.pk}/results/", f"/dashboard/studies/{study.pk}/results/download.csv"]
    first = [client.get(url).content for url in urls]
    page = _page(client, study)
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        again = [client.get(url).content for url in urls]
        assert _page(client, study) == page
    assert again == first
    assert not [q["sql"] for q in queries if "annotation_answer" in q["sql"]], "no answer read again"


def test_scores_computed_before_a_change_are_never_stored_as_current(ten, researcher):
    study, client = ten.study, _client(researcher)
    for name in ("D", "E"):  # the first with no stored row yet, the second with a current one
        counters = scores._stored(study)  # what a reader reads first, then the answers
        fresh, files = scores._compute(study, [ten])
        complete(ten, name)  # a change commits while the reader computes
        late = {ten.pk: (counters[ten.pk], fresh[ten.pk], files[ten.pk])}
        scores._store(late)
        assert ten.pk not in current_rows(study), f"{name}: scores of older answers stored as current"
        assert _cells(client, study)[10]["n"] == fresh[ten.pk].n + 1  # the next reader computes and stores them
        scores._store(late)  # the late reader stores after it: newer scores are never replaced by older ones
        assert check_stored(study) == {ten.pk}


def test_stored_scores_of_another_version_or_unreadable_are_computed_again(ten, researcher):
    study, client = ten.study, _client(researcher)
    assert _cells(client, study)[10]["n"] == 3 and check_stored(study) == {ten.pk}
    for damage in ({"version": VERSION - 1}, {"scores": b"not a pickle"}, {"predictions": b"\x80\x05junk"}):
        StoredScores.objects.filter(cohort=ten).update(**damage)
        cache.clear()
        assert _cells(client, study)[10]["n"] == 3, damage
        assert sorted(scores.prediction_files(Study.objects.get(pk=study.pk))) == sorted(
            Enrollment.objects.filter(cohort=ten).values_list("pk", flat=True)
        )
        assert check_stored(study) == {ten.pk}, damage


def test_a_new_import_of_the_tasks_data_makes_its_cohorts_stored_scores_stale(ten, researcher, tmp_path):
    """The release imported again with one test item's gold changed (``import_clues`` on corrected data): the
    stored scores were computed on the old gold, so they say stale, and the next read scores that gold."""
    study, client = ten.study, _client(researcher)
    assert _cells(client, study)[10]["n"] == 3 and check_stored(study) == {ten.pk}
    release = release_path()
    if release.is_dir():
        shutil.copytree(release, tmp_path / "CLUES-JSON")
    else:
        with zipfile.ZipFile(release) as archive:
            archive.extractall(tmp_path)
    (test_file,) = tmp_path.glob("**/SST-2/sst_test.jsonl")
    lines = test_file.read_text().splitlines()
    first = json.loads(lines[0])
    first["answer"] = ["positive" if first["answer"] == ["negative"] else "negative"]
    test_file.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    item = Example.objects.get(task__slug="sst2", role=Example.Role.TEST, position=0)
    majority_before = _scores(study)[ten.pk].majority_s1[MRC_GOLD[0]][0]

    import_release(next(tmp_path.glob("**/SST-2")).parent)
    item.refresh_from_db()
    assert item.gold == first["answer"]
    assert ten.pk not in current_rows(study), "scores of the old gold say stale"
    stored = _scores(study)[ten.pk]
    assert stored.example_ids[0] == item.pk and stored.majority_s1[MRC_GOLD[0]][0] == 1.0 - majority_before
    assert check_stored(study) == {ten.pk}
