"""recruitment.client against the fake server: timeouts, bounded retries on idempotent calls only."""

import pytest

from recruitment import client as prolific
from tests.recruitment.fake_prolific import TOKEN, FakeProlific


@pytest.fixture
def server():
    fake = FakeProlific().start()
    yield fake
    fake.stop()


def client(server, retries=2):
    return prolific.ProlificClient(TOKEN, server.url, timeout=2, retries=retries, backoff=0)


def test_idempotent_reads_are_retried_a_bounded_number_of_times(server):
    sid = server.start_submission("s1", "a" * 24, force=True)
    server.fail_next = 2
    assert client(server).get_submission(sid)["participant"] == "a" * 24
    assert len(server.calls) == 3
    server.calls.clear()
    server.fail_next = 5
    with pytest.raises(prolific.ProlificError) as error:
        client(server).get_submission(sid)
    assert error.value.status == 503 and len(server.calls) == 3, "1 try + 2 retries, then it gives up"


def test_calls_that_create_approve_or_pay_are_never_retried(server):
    server.fail_next = 1
    with pytest.raises(prolific.ProlificError):
        client(server).create_study({"name": "x"})
    server.fail_next = 1
    with pytest.raises(prolific.ProlificError):
        client(server).pay_bonuses("b1")
    server.fail_next = 1
    with pytest.raises(prolific.ProlificError):
        client(server).approve("s1")
    assert [c[0] for c in server.calls] == ["POST", "POST", "POST"], "one attempt each"


def test_an_unreachable_server_and_a_wrong_token_are_clear_errors(server):
    server.down = True
    with pytest.raises(prolific.ProlificUnreachable, match="could not be reached"):
        client(server, retries=1).get_submission("x")
    server.down = False
    with pytest.raises(prolific.ProlificError) as error:
        prolific.ProlificClient("wrong", server.url, timeout=2).get_submission("x")
    assert error.value.status == 401
    with pytest.raises(ValueError, match="token"):
        prolific.ProlificClient("", server.url)


def test_every_page_of_submissions_is_read_and_pages_elsewhere_are_refused(server):
    for n in range(5):
        server.start_submission("s1", f"{n:024x}", force=True)
    assert len(list(client(server).study_submissions("s1"))) == 5  # page size 2: three pages
    server.url = "http://evil.example/api/v1/"  # a next link pointing off the API
    with pytest.raises(prolific.ProlificError, match="outside the API"):
        list(
            prolific.ProlificClient(
                TOKEN, f"http://127.0.0.1:{server.server.server_address[1]}/api/v1/", timeout=2
            ).study_submissions("s1")
        )
