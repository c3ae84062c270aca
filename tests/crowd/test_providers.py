"""The crowd-provider registry: each platform's identity, completion and link, and a new platform as one
registry entry (a provider class plus one line), taken all the way through the join link and the worker's
last page."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

import crowd
from annotation.models import Enrollment, Worker
from crowd import mturk, prolific
from crowd.base import Completion, CrowdProvider, Identity, InvalidIdentity
from tests.annotation.factories import answer_all, cohort, done_code, gold_answer, make_study, screen_out_code

REPO = Path(__file__).resolve().parents[2]
PID = "5f3a" + "0" * 20


class _Study:
    worker_id_param, worker_id_pattern = "worker_id", ""


def test_the_registry_holds_every_platform_and_names_the_known_ones_for_an_unknown_slug():
    assert list(crowd.PROVIDERS) == ["prolific", "generic", "mturk", "local"]
    assert crowd.choices()[0] == ("prolific", "Prolific")
    with pytest.raises(KeyError, match="known: prolific, generic, mturk, local"):
        crowd.get("myspace")
    assert set(crowd.completion_origins()) == {"https://app.prolific.com", *mturk.SUBMIT_HOSTS}


def test_prolific_reads_one_spelling_of_a_pid_and_sends_the_worker_back_with_the_code():
    provider = crowd.get("prolific")
    who = provider.identity(
        {"PROLIFIC_PID": f" {PID.upper()} ", "STUDY_ID": "s", "SESSION_ID": "x" * 150}, study=_Study()
    )
    assert who == Identity(PID, "x" * 100, {"STUDY_ID": "s", "SESSION_ID": "x" * 100})
    with pytest.raises(InvalidIdentity, match="24 hexadecimal"):
        provider.identity({"PROLIFIC_PID": "not-a-pid"}, study=_Study())
    with pytest.raises(InvalidIdentity, match="needs the PROLIFIC_PID parameter from Prolific"):
        provider.identity({}, study=_Study())
    done = provider.completion("C0DE", data={})
    assert done.redirect_url == prolific.COMPLETE_URL.format(code="C0DE") and done.return_to == "Prolific"


def test_mturk_previews_enroll_nobody_and_the_code_is_posted_only_to_mturk_itself():
    provider = crowd.get("mturk")
    assert provider.identity({"assignmentId": mturk.PREVIEW}, study=_Study()) is None
    who = provider.identity(
        {"workerId": "a1b2", "assignmentId": "AS1", "turkSubmitTo": "https://www.mturk.com/"}, study=_Study()
    )
    assert (who.external_id, who.session, who.data["turkSubmitTo"]) == ("A1B2", "AS1", "https://www.mturk.com")
    with pytest.raises(InvalidIdentity, match="not Mechanical Turk's own address"):
        provider.identity(
            {"workerId": "A", "assignmentId": "B", "turkSubmitTo": "https://evil.example"}, study=_Study()
        )
    posted = provider.completion("C0DE", data=who.data)
    assert posted.post_url == "https://www.mturk.com/mturk/externalSubmit"
    assert posted.post_fields == {"assignmentId": "AS1", "completion_code": "C0DE"}
    # Stored before the allow-list existed: the code is shown, never posted anywhere.
    assert provider.completion("C0DE", data={"turkSubmitTo": "https://evil.example"}).post_url is None


def test_the_generic_link_checks_the_studys_pattern_and_lab_accounts_need_a_login():
    provider = crowd.get("generic")

    class Patterned(_Study):
        worker_id_param, worker_id_pattern = "uid", r"[a-z]{3}\d{3}"

    assert provider.identity({"uid": " abc123 "}, study=Patterned()).external_id == "abc123"
    with pytest.raises(InvalidIdentity, match="does not have the form"):
        provider.identity({"uid": "abc1234"}, study=Patterned())

    class Broken(_Study):
        worker_id_pattern = "(["

    assert "not a valid regular expression" in provider.check_settings(Broken())["worker_id_pattern"][0]
    assert provider.join_query(Patterned()) == "?uid={WORKER_ID}"
    with pytest.raises(crowd.LoginRequired, match="log in"):
        crowd.get("local").identity({}, study=_Study(), user=None)


_PLATFORM_TEST = re.compile(r"""platform\s*[!=]=\s*["']|["'](prolific|mturk|generic|local)["']\s*[!=]=|Platform\.""")


def test_no_code_or_template_outside_the_providers_compares_platform_names():
    def ours(p: Path) -> bool:  # not in a virtual environment (.venv, make test's .venv-test)
        return not any(part.startswith(".venv") for part in p.relative_to(REPO).parts)

    sources = [
        p
        for p in REPO.rglob("*.py")
        if not ({"crowd", "tests", "migrations", "benchmarks"} & set(p.relative_to(REPO).parts))
    ]
    sources += list(REPO.rglob("templates/**/*.html"))
    found = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in sources
        if ours(p)
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if _PLATFORM_TEST.search(line)
    ]
    assert found == []


_PLATFORM_NAMES = re.compile(r"prolific|mturk|mechanical\s*turk|\bsona\b", re.IGNORECASE)


def test_the_protocol_names_no_platform_and_branches_on_none():
    """``annotation/`` (migrations aside: applied migrations keep their names and history) has no platform's
    name in its code, texts or comments, no string that is a registered platform's slug, and no comparison
    with a platform or a slug: every platform question goes to the study's provider."""
    slugs = set(crowd.PROVIDERS)
    found = []
    for path in sorted((REPO / "annotation").rglob("*.py")):
        if "migrations" in path.relative_to(REPO).parts:
            continue
        text = path.read_text()
        where = path.relative_to(REPO)
        found += [
            f"{where}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if _PLATFORM_NAMES.search(line)
        ]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().lower() in slugs:
                found.append(f"{where}:{node.lineno}: the string {node.value!r}")
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(
                    (isinstance(o, ast.Attribute) and o.attr in ("platform", "slug"))
                    or (isinstance(o, ast.Name) and o.id == "platform")
                    for o in operands
                ):
                    found.append(f"{where}:{node.lineno}: a comparison with a platform")
    assert found == []
    assert len(slugs) >= 4  # the check ran against the registry


class Email(CrowdProvider):
    """A platform that puts the worker's address in ?email= and wants the code shown: the whole of a new platform."""

    slug, name = "email", "e-mail list"
    finish_note = " (reply to the invitation with it)"

    def identity(self, params: Mapping[str, str], *, study, user: Any = None) -> Identity:
        return Identity(self.need(params, "email").lower())

    def completion(self, code: str, *, data: Mapping[str, Any]) -> Completion:
        return Completion(code, return_to=self.name)


@pytest.fixture
def email_platform(monkeypatch):
    monkeypatch.setitem(crowd.PROVIDERS, Email.slug, Email())


@pytest.mark.django_db
@pytest.mark.usefixtures("clues", "email_platform")
def test_a_new_platform_is_one_registry_entry_from_the_join_link_to_the_code(researcher):
    from tests.annotation.factories import trim_test_set

    trim_test_set("sst2", 2)
    study = make_study(shots=[0], platform="email", created_by=researcher, completion_code="MAILDONE")
    link = cohort(study, "sst2", 0)
    client = Client()
    assert client.get(link.join_path).status_code == 400  # the provider's own refusal: no email parameter
    assert client.get(link.join_path, {"email": "Ada@Example.org"}).status_code == 302
    worker = Worker.objects.get()
    assert (worker.platform, worker.external_id) == ("email", "ada@example.org")
    assert "you get your completion code (reply to the invitation with it)" in client.get("/work/").content.decode()
    enrollment = Enrollment.objects.get(worker=worker)
    answer_all(enrollment.pk, gold_answer)
    page = client.get("/work/").content.decode()
    assert "MAILDONE" in page and "Copy this code" in page
    researcher_client = Client()
    researcher_client.force_login(researcher)
    detail = researcher_client.get(f"/dashboard/studies/{study.pk}/").content.decode()
    assert "e-mail list" in detail


class Recording(Email):
    """A platform that notes every hook the protocol calls, with the outcome it was given."""

    slug, name = "record", "recording list"

    def __init__(self):
        self.calls: list[tuple[str, str, str, str]] = []
        self.refuse_finish = False

    def _note(self, hook, enrollment, outcome):
        self.calls.append((hook, enrollment.worker.external_id, enrollment.state, outcome.code))

    def on_join(self, enrollment, outcome):
        self._note("join", enrollment, outcome)

    def on_finish(self, enrollment, outcome):
        assert (outcome.part, outcome.parts, outcome.last_part) == (1, 1, True)
        if self.refuse_finish:
            raise RuntimeError("the platform is down")
        self._note("finish", enrollment, outcome)

    def on_filter(self, enrollment, outcome):
        self._note("filter", enrollment, outcome)

    def on_expire(self, enrollment, outcome):
        self._note("expire", enrollment, outcome)

    def on_withdraw(self, enrollment, outcome):
        self._note("withdraw", enrollment, outcome)


@pytest.mark.django_db
@pytest.mark.usefixtures("clues")
def test_the_protocol_calls_the_studys_provider_on_every_move_inside_its_transaction(researcher):
    from annotation import services
    from tests.annotation.factories import trim_test_set

    provider = crowd.register(Recording())
    try:
        trim_test_set("sst2", 2)
        study = make_study(
            shots=[0], platform="record", created_by=researcher, completion_code="FIN", screenout_code="OUT"
        )
        link = cohort(study, "sst2", 0)
        ids = {
            who: services.join(token=link.join_token, params={"email": who}).enrollment.pk
            for who in ("a@x", "b@x", "c@x")
        }
        assert provider.calls == [("join", who, "testing", "") for who in ids]
        services.filter_enrollment(enrollment_id=ids["b@x"], actor="r", reason="by hand")
        services.reinstate_enrollment(enrollment_id=ids["b@x"], actor="r", reason="my mistake")  # no hook
        services.withdraw(enrollment_id=ids["c@x"], actor="r", reason="asked to leave")
        # A hook that raises undoes the move: the last answer is not stored, the worker not completed.
        provider.refuse_finish = True
        with pytest.raises(RuntimeError):
            answer_all(ids["a@x"], gold_answer)
        assert Enrollment.objects.get(pk=ids["a@x"]).state == "testing"
        provider.refuse_finish = False
        answer_all(ids["a@x"], gold_answer)
        assert provider.calls[3:] == [
            ("filter", "b@x", "filtered", screen_out_code(link)),
            ("withdraw", "c@x", "withdrawn", ""),
            ("finish", "a@x", "completed", done_code(link)),
        ]
        assert done_code(link).startswith("FIN") and screen_out_code(link).startswith("OUT")
    finally:
        crowd.unregister(provider.slug)


class RecordingParts(Recording):
    """``Recording`` with the part each hook was told of."""

    slug, name = "recparts", "recording list in parts"

    def _note(self, hook, enrollment, outcome):
        self.calls.append((hook, enrollment.worker.external_id, outcome.code, outcome.part, outcome.parts))

    def on_finish(self, enrollment, outcome):
        self._note("finish", enrollment, outcome)


@pytest.mark.django_db
@pytest.mark.usefixtures("clues")
def test_a_move_out_of_a_later_part_tells_the_provider_that_part_and_its_code(researcher, clock):
    """A cohort in two parts: finishing part 1, then a time-out and a withdrawal in part 2, each reach the provider
    with part 2 of 2 and part 2's own screen-out code, not part 1's."""
    from annotation import services
    from tests.annotation.factories import trim_test_set

    provider = crowd.register(RecordingParts())
    try:
        trim_test_set("sst2", 100)  # 100 items of 8 s under a 10-minute cap: two parts of 50
        study = make_study(
            shots=[0],
            platform=provider.slug,
            created_by=researcher,
            sitting_minutes=10,
            completion_code="FIN",
            screenout_code="OUT",
        )
        link = cohort(study, "sst2", 0)
        ids = {who: services.join(token=link.join_token, params={"email": who}).enrollment.pk for who in ("a@x", "b@x")}
        for pk in ids.values():
            for _ in range(50):
                state = services.current_item(enrollment_id=pk)
                clock.advance(8)
                services.submit_answer(enrollment_id=pk, item=state.item_handle, answer=gold_answer(state.item))
            services.start_next_part(enrollment_id=pk)
        state = services.current_item(enrollment_id=ids["a@x"])
        services.submit_answer(enrollment_id=ids["a@x"], item=state.item_handle, answer=gold_answer(state.item))
        services.withdraw(enrollment_id=ids["b@x"], actor="worker", reason="had to leave")
        clock.advance(Enrollment.objects.get(pk=ids["a@x"]).timer_minutes * 60 + 1)
        assert services.expire_stale() == 1
        assert provider.calls[2:] == [
            ("finish", "a@x", done_code(link, 1), 1, 2),
            ("finish", "b@x", done_code(link, 1), 1, 2),
            ("withdraw", "b@x", "", 2, 2),
            ("expire", "a@x", screen_out_code(link, 2), 2, 2),
        ]
    finally:
        crowd.unregister(provider.slug)
