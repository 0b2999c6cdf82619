"""Ollama's model store: manifests name the models, the GGUF is the blob their model layer points to.

``$OLLAMA_MODELS`` (else ``~/.ollama/models``, and ``/usr/share/ollama/.ollama/models`` where the
Linux service keeps them) holds ``manifests/<registry>/<namespace>/<model>/<tag>`` (JSON) and
``blobs/sha256-<hex>``. A model is shown by the name Ollama shows: ``qwen2.5:14b`` for the
library on registry.ollama.ai, ``user/model:tag`` for another namespace there, the whole
``host/namespace/model:tag`` elsewhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

MODEL_LAYER = "application/vnd.ollama.image.model"
DEFAULT_REGISTRY = "registry.ollama.ai"
DEFAULT_NAMESPACE = "library"


@dataclass(frozen=True)
class OllamaModel:
    name: str
    aliases: tuple[str, ...]  # "qwen2.5" for "qwen2.5:latest", as Ollama accepts it
    manifest: Path
    blob: Path | None  # None when the manifest names no model blob that is on disk
    size_bytes: int
    problem: str  # why it cannot be used ("" = it can)


def ollama_roots() -> list[Path]:
    """Where Ollama keeps models: ``OLLAMA_MODELS`` when set, else the per-user and the service folder."""
    configured = os.environ.get("OLLAMA_MODELS", "").strip()
    if configured:
        return [Path(configured).expanduser()]
    return [Path.home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")]


def ollama_models(root: Path) -> list[OllamaModel]:
    manifests = root / "manifests"
    if not manifests.is_dir():
        return []
    found: list[OllamaModel] = []
    for manifest in sorted(manifests.glob("*/*/*/*")):
        if manifest.is_file() and not manifest.name.startswith("."):
            found.append(_model(root, manifest))
    return found


def display_name(manifest: Path, manifests: Path) -> str:
    host, namespace, model, tag = manifest.relative_to(manifests).parts
    if host == DEFAULT_REGISTRY:
        base = model if namespace == DEFAULT_NAMESPACE else f"{namespace}/{model}"
    else:
        base = f"{host}/{namespace}/{model}"
    return f"{base}:{tag}"


def _model(root: Path, manifest: Path) -> OllamaModel:
    name = display_name(manifest, root / "manifests")
    aliases = (name.removesuffix(":latest"),) if name.endswith(":latest") else ()

    def broken(problem: str) -> OllamaModel:
        return OllamaModel(name, aliases, manifest, None, 0, problem)

    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers") or []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        return broken(f"unreadable manifest {manifest}: {getattr(exc, 'strerror', None) or exc}")
    model_layers = [layer for layer in layers if isinstance(layer, dict) and layer.get("mediaType") == MODEL_LAYER]
    if not model_layers:
        return broken("its manifest has no GGUF model layer")
    digest = str(model_layers[0].get("digest", ""))
    blob = _blob(root, digest)
    if blob is None:
        return broken(f"its model blob {digest or '(no digest)'} is missing from {root / 'blobs'}")
    return OllamaModel(name, aliases, manifest, blob, blob.stat().st_size, "")


def _blob(root: Path, digest: str) -> Path | None:
    """The blob file of ``sha256:<hex>``: ``sha256-<hex>``, or ``sha256:<hex>`` as older Ollama wrote it."""
    if not digest.startswith("sha256:"):
        return None
    for name in (digest.replace(":", "-", 1), digest):
        path = root / "blobs" / name
        if path.is_file():
            return path
    return None
