import os

os.environ.setdefault("MEMRL_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memrl.runtime import set_torch_threads  # noqa: E402

# small networks, as in the pipeline: one thread (two oversubscribe a busy CPU badly)
set_torch_threads(1)
