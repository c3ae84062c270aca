"""A tiny causal LM made here, saved like any checkpoint, for a real inference server to load by path: a byte-level
BPE (``tokenizers``) trained on the demo data's training files, a 2-layer ``LlamaConfig`` (hidden 32) with random
weights, and a chat template, so that ``transformers serve`` can hold a conversation with it. It answers nonsense,
quickly: what is tested is everything around the model."""

from __future__ import annotations

import json
from pathlib import Path

from tasks_data.management.commands.import_clues import DEMO_DATA

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def training_texts() -> list[str]:
    """Every text of the demo's training files (contexts, questions and answers)."""
    texts = []
    for path in sorted(DEMO_DATA.glob("*/*_train_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            context = row["context"]
            texts += [" ".join(context) if isinstance(context, list) else context, str(row["question"])]
            texts += [a["text"] if isinstance(a, dict) else str(a) for a in row["answer"]]
    return texts


def build(path: Path, *, vocab_size: int = 600, max_positions: int = 16384, seed: int = 0) -> str:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(training_texts(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="</s>",
        model_max_length=max_positions,
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],  # a causal LM takes no token types
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)
