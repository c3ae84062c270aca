"""Comments say why, never which ticket: the repository links no issue tracker, so "issue 12" means nothing
to a reader. Applied migrations keep their names (renaming them would break existing databases)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISSUE = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
# What may name an issue: applied migrations, the changelog (a history of releases), vendored code.
EXEMPT = ("/migrations/", "tests/browser/vendor/", "CHANGELOG.md")


def test_no_file_cites_an_issue_number():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    cited = []
    for name in files:
        if any(part in name for part in EXEMPT) or not name.endswith(
            (".py", ".html", ".css", ".js", ".md", ".txt", ".toml", ".cfg", ".yaml", ".yml", "Makefile", ".ci/run")
        ):
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if ISSUE.search(line) and name != "tests/test_comments.py":
                cited.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not cited, "issue numbers cited (say the reason instead):\n" + "\n".join(cited)
