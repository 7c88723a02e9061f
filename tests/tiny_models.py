"""Tiny random models built on the fly, so tests never reach a model hub.

``make_tiny_bert(path)`` writes a 2-layer BERT with a WordPiece tokenizer (ASCII,
digits, a few Hangul syllables and Hanja) plus the sentence-transformers module
files, so ``SentenceTransformer(path)`` loads it through the real code path.
``make_tiny_bert(path, cross_encoder=True)`` writes a sequence-classification
head instead (one label), loadable by ``CrossEncoder(path)``.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

HANGUL = "가나다라마바사아자차카타파하갑을병정무기경신임계목화토금수년월일시음양오행서버배포장애"
HANJA = "甲乙丙丁戊己庚辛壬癸子丑寅卯辰巳午未申酉戌亥木火土金水陰陽五行沖冲"
WORDS = [
    "the", "and", "server", "deploy", "error", "log", "index", "search", "query", "chunk",
    "kubernetes", "pod", "node", "restart", "config", "file", "data", "model", "token", "test",
]


def tiny_vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase) + list(string.digits) + list(string.punctuation)
    subwords = ["##" + c for c in string.ascii_lowercase + string.digits]
    cjk = list(HANGUL) + list(HANJA)
    seen: set[str] = set()
    vocab = []
    for tok in specials + chars + subwords + cjk + ["##" + c for c in HANGUL] + WORDS:
        if tok not in seen:
            seen.add(tok)
            vocab.append(tok)
    return vocab


def make_tiny_bert(
    path: str | Path,
    max_position_embeddings: int = 64,
    *,
    max_seq_length: int | None = None,
    hidden_size: int = 32,
    cross_encoder: bool = False,
    seed: int = 0,
) -> Path:
    """Write a tiny random BERT (+ tokenizer, + sentence-transformers files) into ``path``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    # strip_accents=False: BERT's accent stripping NFD-decomposes Hangul syllables into jamo
    tokenizer = BertTokenizerFast(
        vocab={tok: i for i, tok in enumerate(vocab)},
        do_lower_case=True,
        strip_accents=False,
        tokenize_chinese_chars=True,
    )
    tokenizer.model_max_length = max_position_embeddings
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=max_position_embeddings,
        num_labels=1,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config) if cross_encoder else BertModel(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    if cross_encoder:
        return path
    # sentence-transformers layout: Transformer -> mean Pooling -> Normalize
    (path / "1_Pooling").mkdir(exist_ok=True)
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": hidden_size,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            }
        )
    )
    (path / "2_Normalize").mkdir(exist_ok=True)
    (path / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ]
        )
    )
    (path / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length or max_position_embeddings, "do_lower_case": False})
    )
    return path
