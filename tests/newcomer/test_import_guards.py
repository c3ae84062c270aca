"""import_clues guards a newcomer's data: --demo never silently replaces CLUES data, and a failed download is
remembered (make run does not wait on the network at every start)."""

import hashlib
import io
import os
import time

import pytest
from django.core.management import CommandError, call_command

from tasks_data.importer import download_official, import_release
from tasks_data.management.commands import import_clues
from tasks_data.management.commands.import_clues import DEMO_SOURCE, FAILED_MARKER
from tasks_data.models import Example, Task
from tests.tasks_data import synthetic

CLUES_SOURCE = "CLUES release CLUES-JSON.zip"


def run_import(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_clues", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_demo_refuses_to_replace_clues_data_without_force(db, tmp_path):
    import_release(synthetic.write_release(tmp_path / "clues", tag="c"), source=CLUES_SOURCE)
    before = list(Example.objects.order_by("pk").values())
    with pytest.raises(CommandError, match=rf"CLUES data is already imported \({CLUES_SOURCE}\).*--force"):
        run_import("--demo")
    assert list(Example.objects.order_by("pk").values()) == before
    assert set(Task.objects.values_list("source", flat=True)) == {CLUES_SOURCE}

    out, _ = run_import("--demo", "--force")
    assert out.startswith(f"Loaded {DEMO_SOURCE}.")
    assert set(Task.objects.values_list("source", flat=True)) == {DEMO_SOURCE}


def test_demo_needs_no_force_on_an_empty_database_or_over_the_demo(db):
    out, _ = run_import("--demo")
    assert out.startswith(f"Loaded {DEMO_SOURCE}.")
    out, _ = run_import("--demo")
    assert "Nothing changed" in out


class Downloads:
    """download_official on a file:// URL that is missing (offline) or serves a synthetic release."""

    def __init__(self, tmp_path):
        self.missing = (tmp_path / "missing.zip").as_uri()
        release = synthetic.write_release(tmp_path / "served", tag="dl")
        self.archive = synthetic.zip_release(release, tmp_path / "served.zip")
        self.online = False
        self.calls = 0

    def __call__(self, cache):
        self.calls += 1
        if not self.online:
            return download_official(cache, url=self.missing)
        digest = hashlib.sha256(self.archive.read_bytes()).hexdigest()
        return download_official(cache, url=self.archive.as_uri(), sha256=digest)


@pytest.fixture
def downloads(monkeypatch, settings, tmp_path):
    settings.CLUES_DATA = ""
    fake = Downloads(tmp_path)
    monkeypatch.setattr(import_clues, "download_official", fake)
    return fake


def test_a_failed_download_is_remembered_for_a_day(db, downloads, tmp_path):
    cache = tmp_path / "cache"
    out, err = run_import("--fallback-demo", "--cache", str(cache))
    assert downloads.calls == 1 and "could not download" in err
    marker = cache / FAILED_MARKER
    assert "could not download" in marker.read_text()

    # The next start does not try again: it says when it failed and how to retry, and keeps what it has.
    out, err = run_import("--fallback-demo", "--cache", str(cache))
    assert downloads.calls == 1
    assert "the download failed 0.0 h ago" in err and "--retry-download" in err
    assert "Nothing changed" in out or "Keeping" in out
    with pytest.raises(CommandError, match="not tried again for 2[34].\\d h"):
        run_import("--cache", str(cache))
    assert downloads.calls == 1

    # --retry-download tries at once; a marker older than a day is tried again by itself.
    with pytest.raises(CommandError, match="could not download"):
        run_import("--retry-download", "--cache", str(cache))
    assert downloads.calls == 2
    old = time.time() - 25 * 3600
    os.utime(marker, (old, old))
    downloads.online = True
    out, _ = run_import("--cache", str(cache))
    assert downloads.calls == 3
    assert f"Loaded {CLUES_SOURCE}." in out
    assert not marker.exists()  # a success forgets the failure


def test_clues_data_is_used_when_set_and_never_downloads(db, downloads, settings, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / FAILED_MARKER).write_text("offline\n")
    settings.CLUES_DATA = str(synthetic.write_release(tmp_path / "local", tag="l"))
    out, _ = run_import("--fallback-demo", "--cache", str(tmp_path / "cache"))
    assert downloads.calls == 0
    assert out.startswith("Loaded CLUES release ") and Task.objects.count() == 6
