"""No code outside the answer kinds' module (``tasks_data/kinds.py``) asks which kind it holds.

Callers ask the kind object (its methods and properties); a branch on the kind (``is``/``==``/``in``
against a kind, a kind class or a kind's name, ``isinstance`` with a kind class, ``match`` on a kind,
a dict keyed by kinds or by their names) would be one more place to edit for a new kind. An AST walk
over every first-party Python module (the test suite aside: it plays each widget as a person would), and
a look at the templates and scripts, find none.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tasks_data import kinds

ROOT = Path(__file__).resolve().parents[1]
KINDS_MODULE = ROOT / "tasks_data" / "kinds.py"
SKIP_DIRS = {"tests", "migrations", "node_modules", "staticfiles", "artifacts", "vendor"}

KIND_NAMES = frozenset(kinds.KINDS)
KIND_CLASSES = frozenset(
    name for name, obj in vars(kinds).items() if isinstance(obj, type) and issubclass(obj, kinds.AnswerKind)
)
MEMBERS = frozenset(name.upper() for name in KIND_NAMES)  # the old enum's LABEL, SPANS, SPAN_OR_NONE, ENTITY
_KINDISH = re.compile(r"kind", re.IGNORECASE)


def _is_kind_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in KIND_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_kind_name(e) for e in node.elts)
    return False


def _is_kind_object(node: ast.AST) -> bool:
    """A kind itself: a member of a kinds namespace (``AnswerKind.LABEL``), a kind class, ``KINDS[...]``,
    ``get_kind(...)``; or a tuple of such."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_kind_object(e) for e in node.elts)
    if isinstance(node, ast.Attribute) and node.attr in MEMBERS:
        return True
    if isinstance(node, (ast.Name, ast.Attribute)):
        return (node.id if isinstance(node, ast.Name) else node.attr) in KIND_CLASSES
    if isinstance(node, ast.Subscript):
        return "KINDS" in ast.unparse(node.value)
    if isinstance(node, ast.Call):
        return ast.unparse(node.func).endswith("get_kind")
    return False


def kind_branches(source: str, filename: str = "<snippet>") -> list[str]:
    """Where ``source`` branches on an answer kind: ``file:line: code``."""
    found = []

    def flag(node: ast.AST) -> None:
        found.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:100]}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_kind_object(o) for o in operands):
                flag(node)
            elif any(_is_kind_name(o) for o in operands) and any(_KINDISH.search(ast.unparse(o)) for o in operands):
                flag(node)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("isinstance", "issubclass"):
            if len(node.args) == 2 and _is_kind_object(node.args[1]):
                flag(node)
        elif isinstance(node, ast.Match) and _KINDISH.search(ast.unparse(node.subject)):
            flag(node)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if any(_is_kind_object(k) for k in keys) or sum(_is_kind_name(k) for k in keys) >= 2:
                flag(node)
        elif isinstance(node, ast.Attribute) and node.attr in MEMBERS and ast.unparse(node.value).endswith("Kind"):
            flag(node)  # the old enum's members: gone, and never to come back
    return sorted(set(found))


def _sources(suffix: str, *, under: Path = ROOT):
    for path in sorted(under.rglob(f"*{suffix}")):
        parts = path.relative_to(ROOT).parts
        if set(parts) & SKIP_DIRS or any(p.startswith(".") and p != ".ci" for p in parts):  # .venv, .git, caches
            continue
        yield path


_NAMES = "|".join(sorted(KIND_NAMES))
TEMPLATE_BRANCH = re.compile(rf"""kind[\w.]*\s*[!=]=\s*["'](?:{_NAMES})["']|answer_kind\.value""")
SCRIPT_BRANCH = re.compile(
    rf"""kind\w*["'\]]?\s*[!=]==?\s*["'](?:{_NAMES})["']|["'](?:{_NAMES})["']\s*[!=]==?\s*\w*kind"""
    rf"""|data-widget=\\?["'](?:{_NAMES})\b"""
)


def test_no_module_outside_the_kinds_branches_on_an_answer_kind():
    branches = []
    for path in _sources(".py"):
        if path == KINDS_MODULE:
            continue
        branches += kind_branches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert branches == []


def test_no_template_or_page_script_branches_on_an_answer_kind():
    """Templates include the kind's widget and read its texts; work.js dispatches on data-widget to the
    widget's own script (static/js/widgets/), which alone knows its name."""
    found = []
    for path in [*_sources(".html"), *_sources(".js", under=ROOT / "static")]:
        if path.parent.name == "widgets":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            pattern = TEMPLATE_BRANCH if path.suffix == ".html" else SCRIPT_BRANCH
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found == []


def test_the_walk_finds_each_kind_of_branch():
    """The checks above could fail: each form of a kind branch is found, and asking the kind is not."""
    branches = {
        "is_member": "if spec.answer_kind is AnswerKind.LABEL: pass",
        "in_members": "ok = task.answer_kind in (AnswerKind.SPANS, AnswerKind.SPAN_OR_NONE)",
        "name_eq": 'if kind.name == "spans": pass',
        "value_in": 'x = spec.answer_kind.value in ("span_or_none", "entity")',
        "payload": 'if item["kind"] == "label": pass',
        "registry": 'if spec.answer_kind is KINDS["entity"]: pass',
        "isinstance": "if isinstance(kind, LabelKind): pass",
        "match": 'match spec.answer_kind.name:\n    case "label": pass',
        "dict_members": 'NONE = {AnswerKind.SPANS: "none"}',
        "dict_names": 'NONE = {"spans": "none", "span_or_none": "no answer"}',
        "member_use": "default = AnswerKind.ENTITY",
    }
    for name, source in branches.items():
        assert kind_branches(source), name
    fine = (
        "if spec.answer_kind.allows_empty and kind.max_spans is None: pass",
        'item = {"kind": kind.name, "labels": labels}',
        'if row.kind == "human": pass',
        'if piece.kind == "tok": pass',
        'payload = {"label": "Training", "position": 1}',
        "ctx.update(kind.widget_context(spec, item, PIECES))",
    )
    for source in fine:
        assert kind_branches(source) == [], source
    assert TEMPLATE_BRANCH.search('{% if kind == "label" %}') and not TEMPLATE_BRANCH.search("{% if kind.name %}")
    assert SCRIPT_BRANCH.search("var labels = $(stage, '[data-widget=\"label\"]');")
    assert SCRIPT_BRANCH.search('if (item.kind === "entity") {}')
    assert not SCRIPT_BRANCH.search("var w = $(stage, '[data-widget]');")
