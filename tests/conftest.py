import os

import pytest
import yaml

os.environ.setdefault("MEMRL_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memrl.runtime import repo_root, set_torch_threads  # noqa: E402

# small networks, as in the pipeline: one thread (two oversubscribe a busy CPU badly)
set_torch_threads(1)


@pytest.fixture
def params_with(tmp_path):
    """``params_with(mutate, family=None)``: a copy of params.yaml in ``tmp_path`` changed by
    ``mutate`` (given the whole file, or ``family``'s default block); returns its path."""

    def write(mutate, family=None):
        raw = yaml.safe_load((repo_root() / "params.yaml").read_text())
        mutate(raw if family is None else raw[family]["default"])
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(raw))
        return path

    return write
