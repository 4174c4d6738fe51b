"""One module per family: the pydantic schema of its ``params.yaml`` section.

Each module defines ``FAMILY_PARAMS``, the model :func:`memrl.config.load_family`
validates the merged profile with.
"""
