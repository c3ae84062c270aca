"""Fixtures for the adapter tests: tiny checkpoints (built once per session, on CPU) and the
real CLUES zip (skipped with a reason when absent). No database, no Django."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # pyproject's pythonpath does this; kept for other runners
    sys.path.insert(0, str(REPO))

from tests.adapters import adapter_synthetic as synthetic  # noqa: E402
from tests.adapters import tiny_models  # noqa: E402

VERBALIZER_WORDS = ["terrible", "great", "Yes", "Maybe", "No"]


def pytest_configure(config):
    config.addinivalue_line("markers", "default_model: loads the bundled MiniLM-L6 encoder (a few seconds on CPU)")


@pytest.fixture(autouse=True, scope="session")
def _quiet_single_threaded_torch():
    """Tiny models run fastest on one thread, and a shared 2-core machine makes OpenMP
    spin-waiting across threads very slow; also silence transformers' head-init warnings."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def texts():
    return synthetic.all_texts()


@pytest.fixture(scope="session")
def bert_path(tmp_path_factory, texts):
    """Tiny BERT encoder (no head) + WordPiece tokenizer, for ``ft``."""
    return tiny_models.bert_checkpoint(tmp_path_factory.mktemp("tiny-bert"), texts, split_words=synthetic.SUBWORD_WORDS)


@pytest.fixture(scope="session")
def mlm_path(tmp_path_factory, texts):
    """Tiny BERT masked LM whose vocabulary has the LM-BFF verbalizer words, for ``pt``."""
    return tiny_models.bert_checkpoint(
        tmp_path_factory.mktemp("tiny-mlm"), texts, mlm=True, whole_words=VERBALIZER_WORDS
    )


@pytest.fixture(scope="session")
def gpt2_path(tmp_path_factory, texts):
    return tiny_models.gpt2_checkpoint(tmp_path_factory.mktemp("tiny-gpt2"), texts)


@pytest.fixture(scope="session")
def t5_path(tmp_path_factory, texts):
    return tiny_models.t5_checkpoint(tmp_path_factory.mktemp("tiny-t5"), texts)


def clues_zip_path() -> Path:
    env = os.environ.get("CLUES_DATA")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "clues" / "CLUES-JSON.zip"


@pytest.fixture(scope="session")
def clues_zip():
    path = clues_zip_path()
    if not path.is_file():
        pytest.skip(f"CLUES data zip not found at {path} (set CLUES_DATA to its path)")
    return str(path)
