from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from tasks_data.registry import TASKS
from tasks_data.importer import CluesImportError, ImportReport, download_official, import_release

DEMO_DATA = Path(__file__).resolve().parents[2] / "demo" / "CLUES-JSON"


class Command(BaseCommand):
    help = (
        "Import the CLUES data: PATH is the official CLUES-JSON.zip or its unzipped folder. Without "
        "PATH, $CLUES_DATA is used, else the official zip is downloaded and its sha256 checked. "
        "Everything is validated first; on any error nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", help="CLUES-JSON.zip or its folder")
        parser.add_argument("--demo", action="store_true", help="import the bundled demo data instead")
        parser.add_argument("--fallback-demo", action="store_true",
                            help="if the CLUES data cannot be found or downloaded, import the demo data")
        parser.add_argument("--cache", default=str(settings.BASE_DIR / ".cache"),
                            help="where a downloaded zip is kept")

    def handle(self, *args, path=None, demo=False, fallback_demo=False, cache=None, **options):
        if demo:
            return self._import(DEMO_DATA, "demo data (invented, not CLUES)")
        path = path or settings.CLUES_DATA
        if not path:
            self.stderr.write("No PATH and no CLUES_DATA: downloading the official CLUES-JSON.zip ...")
            try:
                path = download_official(Path(cache))
            except CluesImportError as exc:
                if not fallback_demo:
                    raise CommandError(str(exc))
                self.stderr.write(self.style.WARNING(f"{exc}\nLoading the bundled demo data instead."))
                return self._import(DEMO_DATA, "demo data (invented, not CLUES)")
        self._import(Path(path), f"CLUES release {Path(path).name}")

    def _import(self, path: Path, label: str):
        bar = tqdm(total=len(TASKS), desc="validating", unit="task", file=self.stderr._out, leave=False)

        def progress(name):
            bar.set_description(f"validating {name}")
            bar.update(1)

        try:
            report = import_release(path, source=label, progress=progress)
        except CluesImportError as exc:
            bar.close()
            raise CommandError(f"{len(exc.errors)} problem(s) in {path}; nothing was imported:\n  "
                               + "\n  ".join(exc.errors))
        bar.close()
        self._print(report)

    def _print(self, report: ImportReport):
        out = self.stdout.write
        out(f"Loaded {report.source}.")
        header = f"{'Task':<10} {'Category':<32} {'Train (K shots: rows)':<28} {'Test':>5} {'Chains':<34} Status"
        out(header)
        out("-" * len(header))
        for t in report.tasks:
            train = "/".join(str(k) for k in sorted(t.train_rows))
            rows = "/".join(str(t.train_rows[k]) for k in sorted(t.train_rows))
            chains = " ".join("->".join(str(c[k]) for k in sorted(c)) for c in t.chains)
            status = "imported" if t.changed else "unchanged"
            out(f"{t.spec.name:<10} {t.spec.category.value:<32} {train + ': ' + rows:<28} {t.test:>5} "
                f"{chains:<34} {status}")
        for t in report.tasks:
            test_missing, train_missing = t.gold_not_in_context
            if test_missing or train_missing:
                self.stderr.write(self.style.WARNING(
                    f"warning: {t.spec.name}: gold answers not found in their context in {test_missing} test "
                    f"row(s) and {train_missing} training example(s); no exact-match answer can reach them."))
        if report.missing:
            self.stderr.write(self.style.WARNING(f"warning: not in this data: {', '.join(report.missing)}"))
        out("Nothing changed: the data was already imported." if not report.changed
            else f"Imported {sum(t.changed for t in report.tasks)} task(s).")
