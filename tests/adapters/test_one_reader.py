"""One CLUES reader for the importer and the adapters (SQuAD's answer_start kept), transformers'
own warm-up schedule, and a registry where every task declares its demo data and prompt method."""

from pathlib import Path

import pytest

from fewshot_models.base import answer_span, find_occurrences
from fewshot_models.clues_io import load_split
from tasks_data.registry import CLUES_TASKS, SHOTS, SPLITS

REPO = Path(__file__).resolve().parents[2]


def _answerable_training_examples(zip_path):
    task = CLUES_TASKS["squad2"]
    seen = {}
    for shots in SHOTS:
        for split in SPLITS:
            for ex in load_split(str(zip_path), task, task.train_filename(shots, split)):
                if ex.answers:
                    seen.setdefault((ex.context, ex.question), ex)
    return list(seen.values())


def test_squad_answers_are_located_where_the_file_says(clues_zip):
    examples = _answerable_training_examples(clues_zip)
    assert len(examples) == 99
    wrong_by_search = 0
    for ex in examples:
        start = ex.answer_starts[0]
        text = ex.answers[0]
        assert ex.context[start : start + len(text)] == text
        assert answer_span(ex, ex.context) == (start, start + len(text))
        if find_occurrences(ex.context, text)[0][0] != start:
            wrong_by_search += 1  # what a reader dropping answer_start would have trained on
    assert wrong_by_search == 1


@pytest.mark.django_db
def test_the_database_path_keeps_answer_start_too(clues_zip):
    from baselines.services import to_adapter_example
    from tasks_data.importer import import_release
    from tasks_data.models import Example

    import_release(Path(clues_zip), source="CLUES release")
    by_content = {(e.context, e.question): e for e in _answerable_training_examples(clues_zip)}
    rows = Example.objects.filter(task__slug="squad2", role="train", is_impossible=False)
    assert rows.count() == 99
    for row in rows:
        ex = to_adapter_example(row)
        assert ex.answer_starts == by_content[(ex.context, ex.question)].answer_starts
        assert answer_span(ex, ex.context)[0] == ex.answer_starts[0]


def test_warm_up_is_transformers_linear_schedule():
    torch = pytest.importorskip("torch")
    from transformers import get_linear_schedule_with_warmup

    from fewshot_models.runtime import TrainLoop

    def lrs(make, steps):
        out = []
        model = torch.nn.Linear(2, 1)
        loop = make(model)
        for _ in range(steps):
            out.append(loop.optimizer.param_groups[0]["lr"])
            loop.optimizer.step()
            loop.scheduler.step()
        return out

    for total in (3, 6, 20):
        ours = lrs(
            lambda m, total=total: TrainLoop(
                m, lr=1.0, total_steps=total, device=torch.device("cpu"), warmup_ratio=0.1
            ),
            total,
        )

        def bare(m, total=total):
            o = torch.optim.AdamW(m.parameters(), lr=1.0)
            return type("L", (), {"optimizer": o, "scheduler": get_linear_schedule_with_warmup(o, 0.1 * total, total)})

        assert ours == pytest.approx(lrs(bare, total))
        # The warm-up starts at 0 (the hand-written schedule started at the peak: one step early).
        assert ours[0] == 0.0
    assert lrs(
        lambda m: TrainLoop(m, lr=1.0, total_steps=3, device=torch.device("cpu"), warmup_ratio=0.1), 3
    ) == pytest.approx([0.0, 2 / 2.7, 1 / 2.7])


def test_every_clues_task_has_demo_data_its_prompt_method_and_the_papers_row():
    demo = REPO / "tasks_data" / "demo" / "CLUES-JSON"
    for task in CLUES_TASKS.values():
        folder = demo / task.clues_folder
        assert (folder / task.test_filename).is_file(), f"{task.slug}: no demo test file"
        assert any(folder.glob(f"{task.clues_prefix}_train_*_*.jsonl")), f"{task.slug}: no demo training file"
        assert task.prompt is not None, f"{task.slug}: TaskSpec.prompt must give verbalizers or not_applicable"
        if task.prompt.applies:
            assert set(task.prompt.verbalizer) == set(task.labels), task.slug
            assert task.prompt.max_length
        else:
            assert task.prompt.not_applicable.strip(), task.slug
        assert set(task.paper_ft_bert_base) == set(SHOTS), f"{task.slug}: the paper's row ({task.paper_table})"


def test_prompt_ft_reads_its_verbalizer_from_the_registry():
    from dataclasses import replace

    from fewshot_models.prompt_ft import PromptFTAdapter

    adapter = PromptFTAdapter()
    assert adapter.applies_to(CLUES_TASKS["sst2"]) is None
    assert "future work" in adapter.applies_to(CLUES_TASKS["squad2"])
    assert "declares no prompt method" in adapter.applies_to(replace(CLUES_TASKS["sst2"], prompt=None))


def test_one_text_spans_module_for_worker_pages_and_adapters():
    import subprocess
    import sys

    from fewshot_models import base
    from tasks_data import text_spans
    from worker_pages import text as worker_text

    assert worker_text.tokenize is text_spans.tokenize
    assert base.find_occurrences is text_spans.find_occurrences
    assert text_spans.tokenize("Hi, there!", fine=True) == [(0, 2), (2, 3), (4, 9), (9, 10)]
    code = (
        "import sys; import tasks_data.text_spans, tasks_data.clues_format, fewshot_models.clues_io; "
        "assert not any(m.startswith('django') for m in sys.modules), 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(REPO))
