"""Getting the data: download_official (sha256 checked), import_clues without PATH, --fallback-demo."""

import hashlib
import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tasks_data import importer
from tasks_data.importer import CluesImportError, download_official, import_release
from tasks_data.management.commands import import_clues
from tasks_data.management.commands.import_clues import DEMO_SOURCE
from tasks_data.models import Example, Task
from tests.tasks_data import synthetic


def files_under(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) if path.exists() else []


def test_download_official_checks_sha(clues_zip, tmp_path):
    cache = tmp_path / "cache"
    got = download_official(cache, url=clues_zip.as_uri())
    assert got == cache / "CLUES-JSON.zip"
    assert got.read_bytes() == clues_zip.read_bytes()
    assert files_under(cache) == ["CLUES-JSON.zip"]  # no temporary file left
    # A good cached copy is used as is: no download (this URL would fail).
    assert download_official(cache, url=(tmp_path / "gone.zip").as_uri()) == got


def test_download_official_default_is_the_official_release():
    assert importer.OFFICIAL_URL == "https://github.com/microsoft/CLUES/raw/main/data/JSON/CLUES-JSON.zip"
    assert importer.OFFICIAL_SHA256 == "5475b29462e99abde3d93682866c217e99a43adec6ac6c8221092b9d8ea92fae"


def test_download_official_refuses_another_file(tmp_path):
    other = tmp_path / "other.zip"
    other.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: not the release
    cache = tmp_path / "cache"
    with pytest.raises(CluesImportError) as caught:
        download_official(cache, url=other.as_uri())
    message = str(caught.value)
    assert f"has sha256 {hashlib.sha256(other.read_bytes()).hexdigest()}" in message
    assert f"expected {importer.OFFICIAL_SHA256}; not used" in message
    assert files_under(cache) == []  # nothing left behind


def test_download_official_replaces_a_corrupt_cache(clues_zip, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "CLUES-JSON.zip").write_bytes(b"truncated")
    got = download_official(cache, url=clues_zip.as_uri())
    assert got.read_bytes() == clues_zip.read_bytes()


@pytest.mark.parametrize("url", ["file:///nonexistent/CLUES-JSON.zip", "not a url"])
def test_download_failure_is_a_clear_error(tmp_path, url):
    cache = tmp_path / "cache"
    with pytest.raises(CluesImportError, match=f"could not download {url}: .*Set CLUES_DATA"):
        download_official(cache, url=url)
    assert files_under(tmp_path) == []


class FakeDownload:
    """Stands in for download_official in import_clues: serves ``archive`` from a file:// URL.

    With ``unreachable`` set, the URL does not exist (as when offline).
    """

    def __init__(self, archive: Path, missing: Path):
        self.archive, self.missing = archive, missing
        self.unreachable = False
        self.calls: list[Path] = []

    def __call__(self, cache):
        self.calls.append(Path(cache))
        if self.unreachable:
            return download_official(cache, url=self.missing.as_uri())
        return download_official(
            cache, url=self.archive.as_uri(), sha256=hashlib.sha256(self.archive.read_bytes()).hexdigest()
        )


@pytest.fixture
def fake_download(monkeypatch, settings, tmp_path):
    """No PATH, no CLUES_DATA: import_clues downloads, here a zipped synthetic release."""
    settings.CLUES_DATA = ""
    release = synthetic.write_release(tmp_path / "served", tag="dl")
    fake = FakeDownload(synthetic.zip_release(release, tmp_path / "served.zip"), tmp_path / "missing.zip")
    monkeypatch.setattr(import_clues, "download_official", fake)
    return fake


def run_import(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_clues", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_without_path_or_clues_data_downloads(db, fake_download, tmp_path):
    out, err = run_import("--cache", str(tmp_path / "cache"))
    assert fake_download.calls == [tmp_path / "cache"]
    assert "downloading the official CLUES-JSON.zip" in err
    assert "Loaded CLUES release CLUES-JSON.zip." in out
    assert (tmp_path / "cache" / "CLUES-JSON.zip").is_file()
    assert Task.objects.count() == 6
    assert set(Task.objects.values_list("source", flat=True)) == {"CLUES release CLUES-JSON.zip"}


def test_download_failure_without_fallback_is_an_error(db, fake_download, tmp_path):
    fake_download.unreachable = True
    with pytest.raises(CommandError, match="could not download"):
        run_import("--cache", str(tmp_path / "cache"))
    assert not Task.objects.exists()


def test_fallback_loads_the_demo_and_says_so(db, fake_download, tmp_path, demo_path):
    fake_download.unreachable = True
    out, err = run_import("--fallback-demo", "--cache", str(tmp_path / "cache"))
    assert "Loading the bundled demo data instead." in err
    assert out.startswith(f"Loaded {DEMO_SOURCE}.")
    assert Task.objects.exists()
    assert set(Task.objects.values_list("source", flat=True)) == {DEMO_SOURCE}


def test_fallback_keeps_clues_data_already_imported(db, fake_download, tmp_path):
    """Offline `make run` must not replace the CLUES data imported earlier by the demo."""
    import_release(synthetic.write_release(tmp_path / "earlier", tag="e"), source="CLUES release CLUES-JSON.zip")
    before = list(Example.objects.order_by("pk").values())
    fake_download.unreachable = True
    out, err = run_import("--fallback-demo", "--cache", str(tmp_path / "cache"))
    assert "Keeping the data already imported (CLUES release CLUES-JSON.zip)" in out
    assert "could not download" in err
    assert list(Example.objects.order_by("pk").values()) == before


def test_fallback_not_used_when_download_works(db, fake_download, tmp_path):
    out, _ = run_import("--fallback-demo", "--cache", str(tmp_path / "cache"))
    assert "Loaded CLUES release CLUES-JSON.zip." in out
    assert DEMO_SOURCE not in set(Task.objects.values_list("source", flat=True))


def test_demo_data_imports(demo_data, demo_path):
    """The bundled demo is a valid release in the CLUES format (its contents are the demo's business)."""
    assert demo_data.source == DEMO_SOURCE
    assert demo_data.missing == []
    assert all(t.test > 0 and t.chains for t in demo_data.tasks)
    assert Task.objects.count() == 6
    assert set(Task.objects.values_list("source", flat=True)) == {DEMO_SOURCE}
    again = import_release(demo_path, source=DEMO_SOURCE)
    assert not again.changed
