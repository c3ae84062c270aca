"""``export_results --out FILE`` is atomic: a failure while rendering or writing leaves no file, or the old one intact.

(The importer's counterpart, a failure part-way through ``import_clues`` leaving nothing half-written,
is tests/tasks_data/test_malformed.py::test_failure_during_the_write_leaves_nothing_half_written.)
"""

from __future__ import annotations

import os
import zipfile

import pytest
from django.core.management import CommandError, call_command

from results import exports, formats
from tests.annotation.factories import cohort, complete, make_study, trim_test_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clues")]

OLD = "the previous export, which must survive\n"


@pytest.fixture
def study():
    trim_test_set("sst2", 3)
    study = make_study(shots=[0], workers_per_cohort=2)
    for pid in ("A1", "A2"):
        complete(cohort(study, "sst2", 0), pid)
    return study


def files_in(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize(
    "kind, fmt, name",
    [("table", "md", "table.md"), ("annotators", "csv", "rows.csv"), ("predictions", None, "predictions.zip")],
)
def test_a_successful_export_writes_the_whole_file(study, tmp_path, kind, fmt, name):
    out = tmp_path / name
    args = ["export_results", "--study", str(study.pk), "--kind", kind, "--out", str(out)]
    call_command(*args, *(["--format", fmt] if fmt else []))
    assert files_in(tmp_path) == [name]
    if kind == "predictions":
        assert len(zipfile.ZipFile(out).namelist()) == 2
    else:
        assert out.read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("existing", [False, True], ids=["no file before", "old file kept"])
def test_a_failure_while_rendering_leaves_nothing(study, tmp_path, monkeypatch, existing):
    out = tmp_path / "table.md"
    if existing:
        out.write_text(OLD, encoding="utf-8")

    def failing(*args, **kwargs):
        raise RuntimeError("rendering failed half-way")

    monkeypatch.setattr(formats, "render", failing)
    with pytest.raises(RuntimeError, match="half-way"):
        call_command("export_results", "--study", str(study.pk), "--out", str(out))
    assert files_in(tmp_path) == (["table.md"] if existing else [])
    if existing:
        assert out.read_text(encoding="utf-8") == OLD


@pytest.mark.parametrize("stage", ["write", "fsync", "rename"])
@pytest.mark.parametrize("existing", [False, True], ids=["no file before", "old file kept"])
def test_a_failure_while_writing_leaves_no_partial_file(study, tmp_path, monkeypatch, stage, existing):
    out = tmp_path / "predictions.zip"
    if existing:
        out.write_text(OLD, encoding="utf-8")
    real_fdopen = os.fdopen

    class HalfWritten:
        """A file whose write stores half of the data, then fails (a full disk)."""

        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            self.handle.flush()
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    def fail(*args, **kwargs):
        raise OSError(5, f"simulated failure at {stage}")

    if stage == "write":
        monkeypatch.setattr(exports.os, "fdopen", lambda fd, mode: HalfWritten(real_fdopen(fd, mode)))
    elif stage == "fsync":
        monkeypatch.setattr(exports.os, "fsync", fail)
    else:
        monkeypatch.setattr(exports.os, "replace", fail)
    with pytest.raises(CommandError, match="cannot write"):
        call_command("export_results", "--study", str(study.pk), "--kind", "predictions", "--out", str(out))
    # Neither a partial file under the name nor a temporary file beside it.
    assert files_in(tmp_path) == (["predictions.zip"] if existing else [])
    if existing:
        assert out.read_text(encoding="utf-8") == OLD
