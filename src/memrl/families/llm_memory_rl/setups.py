"""What the LLM family's runs use against what the papers used: the model as the deviations
name it, and a setup narrower than the paper's, which narrows a hold and a fail alike."""

from __future__ import annotations

from memrl.families.llm_memory_rl.params import LLMMemoryRLParams


def model_name(cfg: LLMMemoryRLParams) -> str:
    """The LLM the runs used, as the deviations name it (the served model's URL included)."""
    llm = cfg.llm
    return llm.model + (f" served at {llm.url}" if llm.backend == "server" else "")


def narrower(cfg: LLMMemoryRLParams, ours: str, paper: str, *more: str) -> dict:
    """A setup narrower than the paper's, named (our model and tasks against the paper's):
    it narrows a hold and a fail alike (``partially`` / ``partially contradicted``)."""
    note = f"{cfg.llm.model} {ours} (paper: {paper})"
    return {"coverage_complete": False, "coverage_note": "; ".join((note, *more))}
