"""Tiny models built in-process, saved to a folder and loaded by path like real checkpoints.

* ``bert_checkpoint``: a WordPiece tokenizer (``tokenizers``) whose vocabulary comes from the
  task texts, with [CLS] [SEP] [PAD] [MASK] [UNK], wrapped as a ``PreTrainedTokenizerFast``
  (offsets, word ids), plus a 2-layer BertConfig (hidden 64). ``mlm=True`` saves a
  ``BertForMaskedLM`` (prompt FT); otherwise a bare ``BertModel`` (the adapters add their
  heads, as with a real encoder). Chosen words split into sub-words on purpose.
* ``gpt2_checkpoint``: a byte-level BPE tokenizer (exact decoding, newlines included) and a
  tiny GPT2LMHeadModel.
* ``t5_checkpoint``: a word-level tokenizer (whitespace and punctuation split; decoding joins
  tokens with spaces, so "Smith, Mary" comes back as "Smith , Mary" and the adapter's
  snapping/parsing has to cope, as with a real sentencepiece model) with <pad>=0 </s>=1 <unk>=2 and a T5 post-processor
  (``A </s>`` / ``A </s> B </s>``), plus a tiny T5ForConditionalGeneration.

Dropout is 0 so that the overfitting tests converge quickly and reliably.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def bert_tokenizer(
    texts: Iterable[str], whole_words: Iterable[str] = (), split_words: Iterable[str] = ()
) -> PreTrainedTokenizerFast:
    """A WordPiece tokenizer with a vocabulary built deterministically from ``texts``.

    (The ``tokenizers`` WordPiece/BPE trainers break ties differently from run to run, which
    would make the tiny models, and so the tests, vary between runs.) The vocabulary holds
    every character, alone and as a "##" continuation piece, and every word of the texts
    except ``split_words``, which (like any word not in the texts) are read as several
    sub-word pieces; ``whole_words`` are added as single tokens."""
    whole_words, split_words = list(whole_words), set(split_words)
    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words: set[str] = set()
    for text in texts:
        words.update(w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    chars = sorted({c for w in words for c in w} | set(string.ascii_letters + string.digits + string.punctuation))
    entries = BERT_SPECIALS + chars + ["##" + c for c in chars]
    entries += sorted(w for w in words if len(w) > 1 and w not in split_words) + whole_words
    vocab: dict[str, int] = {}
    for entry in entries:
        vocab.setdefault(entry, len(vocab))
    tk = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tk.normalizer, tk.pre_tokenizer = normalizer, pre_tokenizer
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tk.decoder = decoders.WordPiece()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )
    for word in whole_words:
        ids = tok(word, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, f"{word!r} is not a single token of the tiny tokenizer: {ids}"
    return tok


def bert_checkpoint(
    path: Path,
    texts: Iterable[str],
    *,
    mlm: bool = False,
    hidden: int = 64,
    whole_words: Iterable[str] = (),
    split_words: Iterable[str] = (),
    max_positions: int = 512,
    seed: int = 0,
) -> str:
    tok = bert_tokenizer(texts, whole_words=whole_words, split_words=split_words)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=hidden * 2,
        max_position_embeddings=max_positions,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(config) if mlm else BertModel(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def gpt2_checkpoint(
    path: Path, texts: Iterable[str], *, n_positions: int = 512, vocab_size: int = 600, seed: int = 0
) -> str:
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(list(texts), trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=n_positions,
        clean_up_tokenization_spaces=False,
    )
    config = GPT2Config(
        vocab_size=len(tok),
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def t5_checkpoint(path: Path, texts: Iterable[str], *, d_model: int = 64, seed: int = 0) -> str:
    specials = ["<pad>", "</s>", "<unk>"]
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    words = sorted({w for t in texts for w, _ in pre.pre_tokenize_str(t)} | {"none", ","} - set(specials))
    vocab = {s: i for i, s in enumerate(specials)}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tk.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )
    config = T5Config(
        vocab_size=len(tok),
        d_model=d_model,
        d_kv=16,
        d_ff=d_model * 2,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
