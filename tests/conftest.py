import os

os.environ.setdefault("MEMRL_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
