"""Offline by construction: hub libraries are told never to reach the network.

Imported by ``localrag/__init__`` so the flags are set before sentence-transformers,
transformers or huggingface_hub are imported anywhere in the process.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


# never left to the environment: a stray HF_HUB_OFFLINE=0 in a shell profile must not open the network
FORCED = frozenset({"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
                    "DO_NOT_TRACK"})


def enforce_env() -> None:
    for key, value in OFFLINE_ENV.items():
        if key in FORCED:
            os.environ[key] = value
        else:
            os.environ.setdefault(key, value)
