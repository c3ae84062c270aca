import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from tasks_data.importer import CluesImportError, ImportReport, download_official, import_release
from tasks_data.models import Task
from tasks_data.registry import CLUES_TASKS

DEMO_DATA = Path(__file__).resolve().parents[2] / "demo" / "CLUES-JSON"
DEMO_SOURCE = "demo data (invented, not CLUES)"
# A failed download is remembered in the cache folder (its time and why), so that `make run` does not wait on
# the network at every start; it is tried again after this long, or at once with --retry-download.
FAILED_MARKER = "download-failed"
RETRY_AFTER_SECONDS = 24 * 3600


class Command(BaseCommand):
    help = (
        "Import the CLUES data: PATH is the official CLUES-JSON.zip or its unzipped folder. Without "
        "PATH, $CLUES_DATA is used, else the official zip is downloaded and its sha256 checked. "
        "Everything is validated first; on any error nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", help="CLUES-JSON.zip or its folder")
        parser.add_argument("--demo", action="store_true", help="import the bundled demo data instead")
        parser.add_argument(
            "--fallback-demo",
            action="store_true",
            help="if the CLUES data cannot be found or downloaded, import the demo data "
            "(unless CLUES data is already imported: then keep it)",
        )
        parser.add_argument(
            "--force", action="store_true", help="with --demo: replace CLUES data already imported by the demo data"
        )
        parser.add_argument(
            "--retry-download", action="store_true", help="download again even if a download failed less than a day ago"
        )
        parser.add_argument("--cache", default=str(settings.DATA_DIR / ".cache"), help="where a downloaded zip is kept")

    def handle(
        self,
        *args,
        path=None,
        demo=False,
        fallback_demo=False,
        force=False,
        retry_download=False,
        cache=None,
        **options,
    ):
        if demo:
            kept = self._official_source()
            if kept and not force:
                raise CommandError(
                    f"CLUES data is already imported ({kept}); --demo would replace it by the "
                    "invented demo data. Add --force to do that anyway."
                )
            return self._import(DEMO_DATA, DEMO_SOURCE)
        path = path or settings.CLUES_DATA
        if not path:
            try:
                path = self._download(Path(cache), retry=retry_download)
            except CluesImportError as exc:
                if not fallback_demo:
                    raise CommandError(str(exc)) from None
                kept = self._official_source()
                if kept:
                    self.stderr.write(self.style.WARNING(str(exc)))
                    self.stdout.write(f"Keeping the data already imported ({kept}); the demo data was not loaded.")
                    return
                self.stderr.write(self.style.WARNING(f"{exc}\nLoading the bundled demo data instead."))
                return self._import(DEMO_DATA, DEMO_SOURCE)
        self._import(Path(path), f"CLUES release {Path(path).name}")

    @staticmethod
    def _official_source() -> str | None:
        # The CLUES tasks only: a task of one's own (a card) is no release to keep.
        return (
            Task.objects.filter(card__isnull=True).exclude(source=DEMO_SOURCE).values_list("source", flat=True).first()
        )

    def _download(self, cache: Path, *, retry: bool) -> Path:
        """The official zip (from the cache, else downloaded), unless a download failed less than a day ago."""
        marker = cache / FAILED_MARKER
        cached = cache / "CLUES-JSON.zip"
        if marker.exists() and not cached.exists() and not retry:
            age = time.time() - marker.stat().st_mtime
            if age < RETRY_AFTER_SECONDS:
                reason = marker.read_text(encoding="utf-8").strip()
                raise CluesImportError(
                    [
                        f"the download failed {age / 3600:.1f} h ago ({reason}); not tried again for "
                        f"{(RETRY_AFTER_SECONDS - age) / 3600:.1f} h. Set CLUES_DATA to a local CLUES-JSON.zip, pass "
                        "its path, or add --retry-download (make run: delete " + str(marker) + ")."
                    ]
                )
        if not cached.exists():
            self.stderr.write("No PATH and no CLUES_DATA: downloading the official CLUES-JSON.zip ...")
        try:
            path = download_official(cache)
        except CluesImportError as exc:
            cache.mkdir(parents=True, exist_ok=True)
            # The reason only: the advice is given again when the marker is read.
            marker.write_text("; ".join(e.split(". Set CLUES_DATA")[0] for e in exc.errors) + "\n", encoding="utf-8")
            raise
        marker.unlink(missing_ok=True)
        return path

    def _import(self, path: Path, label: str):
        bar = tqdm(
            total=len(CLUES_TASKS),
            desc="validating",
            unit="task",
            file=self.stderr._out,
            leave=False,
            disable=not self.stderr.isatty(),  # a bar on a terminal, never into a log
        )

        def progress(name):
            bar.set_description(f"validating {name}")
            bar.update(1)

        try:
            report = import_release(path, source=label, progress=progress)
        except CluesImportError as exc:
            raise CommandError(
                f"{len(exc.errors)} problem(s) in {path}; nothing was imported:\n  "
                + "\n  ".join(exc.errors)
                + self._fresh_database_hint(path, label)
            ) from None
        finally:
            bar.close()
        self._print(report)

    @staticmethod
    def _fresh_database_hint(path: Path, label: str) -> str:
        """From the demo to real data: the demo's studies refer to its items, so the real data goes into a fresh
        database (the demo's is kept as it is); the exact command for this database."""
        if label == DEMO_SOURCE or not Task.objects.filter(source=DEMO_SOURCE).exists():
            return ""
        database = settings.DATABASES["default"]
        data = Path(path).resolve()
        if database["ENGINE"].endswith("sqlite3"):
            name = Path(database["NAME"])
            command = f"mv {name} {name.with_name(name.name + '.demo')} && CLUES_DATA={data} make run"
        else:
            # make run creates the database DATABASE_URL names (ensure_database); the password, if any, is left out.
            user = database.get("USER") or "postgres"
            password = ":<password>" if database.get("PASSWORD") else ""
            where = f"{database.get('HOST') or '127.0.0.1'}:{database.get('PORT') or 5432}"
            url = f"postgres://{user}{password}@{where}/{database['NAME']}_clues"
            command = f"DATABASE_URL={url} CLUES_DATA={data} make run"
        return (
            "\nThis database holds studies on the demo data, which the CLUES data would replace. Start the CLUES "
            f"data in a fresh database (the demo's is kept as it is): {command}"
        )

    def _print(self, report: ImportReport):
        out = self.stdout.write
        out(f"Loaded {report.source}.")
        rows = [("Task", "Category", "Train (K shots: rows)", "Test", "Chains (10->20->30 split)", "Status")]
        for t in report.tasks:
            shots = sorted(t.train_rows)
            rows.append(
                (
                    t.spec.name,
                    t.spec.category.value,
                    "/".join(map(str, shots)) + ": " + "/".join(str(t.train_rows[k]) for k in shots),
                    str(t.test),
                    " ".join("->".join(str(c[k]) for k in sorted(c)) for c in t.chains),
                    "imported" if t.changed else "unchanged",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

        def line(row):
            cells = [
                cell.rjust(width) if i == 3 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            return "  ".join(cells).rstrip()

        out(line(rows[0]))
        out("-" * len(line(rows[0])))
        for row in rows[1:]:
            out(line(row))
        for t in report.tasks:
            test_missing, train_missing = t.gold_not_in_context
            if test_missing or train_missing:
                self.stderr.write(
                    self.style.WARNING(
                        f"warning: {t.spec.name}: gold answers not found in their context in {test_missing} test "
                        f"row(s) and {train_missing} training example(s); no exact-match answer can reach them."
                    )
                )
        if report.missing:
            self.stderr.write(self.style.WARNING(f"warning: not in this data: {', '.join(report.missing)}"))
        out(
            "Nothing changed: the data was already imported."
            if not report.changed
            else f"Imported {sum(t.changed for t in report.tasks)} task(s)."
        )
