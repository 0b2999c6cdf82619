"""The models a user already has: a fake Ollama store, an LM Studio folder and a Hugging Face cache in
a temporary HOME, laid out as those tools write them, holding links to the bundled SmolLM2.

`localrag models` lists them by name with what the GGUF header says (read by llama.cpp without
the weights), `ask --model NAME` answers with one of them, a broken file is listed as unreadable,
and a name nobody has is one line, exit 2. The CLI runs in process with the session's embedder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import localrag.embed
from localrag.cli import main
from localrag.config import LLMSettings
from localrag.llm.catalog import catalog
from localrag.llm.discovery import UnknownModel, discover
from localrag.llm.gguf_info import read_gguf_info
from localrag.llm.model_stores import find_models, lookup
from localrag.llm.ollama_store import display_name

REPO = Path(__file__).resolve().parents[1]
STORE_VARIABLES = ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME")


@pytest.fixture(scope="module")
def bundled_digest(bundled_model: Path) -> str:
    digest = hashlib.sha256()
    with bundled_model.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """An empty HOME, the current directory without models/, none of the stores' variables set."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in [*STORE_VARIABLES, *(k for k in os.environ if k.startswith("LOCALRAG_"))]:
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def write_blob(root: Path, digest: str, target: Path | None = None, text: str = "") -> None:
    blob = root / "blobs" / digest.replace(":", "-")
    blob.parent.mkdir(parents=True, exist_ok=True)
    if target is not None:
        blob.symlink_to(target)
    else:
        blob.write_text(text, encoding="utf-8")


def ollama_store(root: Path, bundled: Path, digest: str) -> None:
    """What `ollama pull smollm2:135m` (and a tag sharing its blob, another namespace, hf.co) leaves on disk."""
    write_blob(root, digest, bundled)
    small = {"template": "{{ .Prompt }}", "params": '{"stop": ["<|im_end|>"]}', "config": '{"model_format": "gguf"}'}
    small_digests = {kind: "sha256:" + hashlib.sha256(text.encode()).hexdigest() for kind, text in small.items()}
    for kind, text in small.items():
        write_blob(root, small_digests[kind], text=text)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": small_digests["config"], "size": len(small["config"])},
        "layers": [
            {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": bundled.stat().st_size},
            {"mediaType": "application/vnd.ollama.image.template", "digest": small_digests["template"],
             "size": len(small["template"])},
            {"mediaType": "application/vnd.ollama.image.params", "digest": small_digests["params"],
             "size": len(small["params"])},
        ],
    }
    for where in ("registry.ollama.ai/library/smollm2/135m", "registry.ollama.ai/library/smollm2/latest",
                  "registry.ollama.ai/someone/tiny/q4", "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF/Q4_1"):
        path = root / "manifests" / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest), encoding="utf-8")
    gone = dict(manifest, layers=[dict(manifest["layers"][0], digest="sha256:" + "0" * 64)])
    path = root / "manifests" / "registry.ollama.ai/library/gone/7b"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(gone), encoding="utf-8")


def hf_cache(hub: Path, bundled: Path) -> None:
    """What `huggingface-cli download HuggingFaceTB/SmolLM2-135M-Instruct-GGUF …` leaves: snapshot links to blobs."""
    repo = hub / "models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / ("c" * 64)).symlink_to(bundled)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123", encoding="utf-8")
    for revision in ("abc123", "old456"):  # two revisions of the same file: listed once
        snapshot = repo / "snapshots" / revision
        snapshot.mkdir(parents=True)
        (snapshot / "smollm2-135m-instruct-q4_1.gguf").symlink_to(Path("../../blobs") / ("c" * 64))


def lmstudio_folder(models: Path, bundled: Path) -> None:
    folder = models / "lmstudio-community" / "SmolLM2-135M-Instruct-GGUF"
    folder.mkdir(parents=True)
    (folder / "SmolLM2-135M-Instruct-Q4_1.gguf").symlink_to(bundled)
    broken = models / "someone" / "broken-GGUF"
    broken.mkdir(parents=True)
    (broken / "broken-Q4_K_M.gguf").write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\xff" * 60)
    (broken / "download-Q8_0.gguf").write_text("<html>rate limited</html>", encoding="utf-8")
    (broken / "mmproj-model-f16.gguf").write_bytes(b"GGUF")  # a vision projector: not a model to list


@pytest.fixture
def stores(home: Path, bundled_model: Path, bundled_digest: str) -> Path:
    ollama_store(home / ".ollama" / "models", bundled_model, bundled_digest)
    hf_cache(home / ".cache" / "huggingface" / "hub", bundled_model)
    lmstudio_folder(home / ".lmstudio" / "models", bundled_model)
    return home


@pytest.fixture(autouse=True)
def _shared_embedder(embedder, monkeypatch):
    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


SMOLLM2_NAMES = {
    "smollm2:135m": "Ollama", "smollm2:latest": "Ollama", "someone/tiny:q4": "Ollama",
    "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_1": "Ollama",
    "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1": "Hugging Face",
    "lmstudio-community/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_1": "LM Studio",
}


def test_models_lists_each_store_by_name_with_the_header_figures(stores, bundled_model):
    entries = {e.model.name: e for e in catalog(LLMSettings()).entries}
    assert set(SMOLLM2_NAMES) <= set(entries)
    truth = read_gguf_info(bundled_model)
    assert truth.params == 134_515_008 and truth.quantisation == "Q4_1" and truth.context_length == 8192
    for name, source in SMOLLM2_NAMES.items():
        entry = entries[name]
        assert entry.usable and entry.model.source == source, name
        assert entry.model.size_bytes == bundled_model.stat().st_size
        assert entry.info == truth
        assert entry.auto_strategy(3_000_000_000) == "graph"
    # the Ollama names point at the blob their manifest's model layer names
    assert entries["smollm2:135m"].model.path.name.startswith("sha256-")
    # two snapshots of one HF file are one entry; the projector and later shards are not models
    assert sum("HuggingFaceTB/" in n for n in entries) == 1
    assert not any("mmproj" in n for n in entries)
    default = [e for e in entries.values() if e.default]
    assert len(default) == 1 and default[0].model.path == discover("").path


def test_a_broken_file_is_listed_as_unreadable_never_a_crash(stores):
    entries = {e.model.name: e for e in catalog(LLMSettings()).entries}
    broken = entries["someone/broken-GGUF/broken-Q4_K_M"]
    assert not broken.usable and broken.problem.startswith("unreadable: ") and broken.info is None
    html = entries["someone/broken-GGUF/download-Q8_0"]
    assert not html.usable and "not a GGUF file" in html.problem
    gone = entries["gone:7b"]
    assert not gone.usable and "missing" in gone.problem


def test_the_models_command_prints_and_writes_json(stores, capsys):
    code, out, err = _run(capsys, "models", "--json")
    assert code == 0, err
    listed = {m["name"]: m for m in json.loads(out)["models"]}
    qwen_like = listed["smollm2:135m"]
    assert (qwen_like["params"], qwen_like["size_label"], qwen_like["quantisation"], qwen_like["context_length"],
            qwen_like["chat_template"], qwen_like["auto_strategy"]) == (134_515_008, "135M", "Q4_1", 8192, True, "graph")
    assert listed["someone/broken-GGUF/broken-Q4_K_M"]["usable"] is False
    code, out, err = _run(capsys, "models")
    assert code == 0 and "Traceback" not in err
    assert "smollm2:135m" in out and "unreadable" in out and "135M · Q4_1 · context 8,192" in out
    assert "* used without --model" in out


def test_ollama_models_and_hf_home_are_honoured(home, bundled_model, bundled_digest, monkeypatch, tmp_path):
    ollama_store(tmp_path / "elsewhere" / "ollama", bundled_model, bundled_digest)
    hf_cache(tmp_path / "hf" / "hub", bundled_model)
    assert not any(m.source in ("Ollama", "Hugging Face") for m in find_models())
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "elsewhere" / "ollama"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    names = {m.name: m.source for m in find_models()}
    assert names["smollm2:135m"] == "Ollama"
    assert names["HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1"] == "Hugging Face"


def test_names_pick_a_model_and_a_file_stem_is_an_alias(stores):
    assert discover("smollm2:135m").name == "smollm2:135m"
    assert discover("smollm2").name == "smollm2:latest"  # Ollama's :latest may be left out
    hf = discover("smollm2-135m-instruct-q4_1")  # the stem of the HF file: unique, so it picks it
    assert hf.source == "Hugging Face" and hf.name == "smollm2-135m-instruct-q4_1"
    with pytest.raises(UnknownModel, match="did you mean"):
        discover("smollm2:136m")


def test_ollama_names_follow_ollamas_rules(tmp_path):
    manifests = tmp_path / "manifests"
    assert display_name(manifests / "registry.ollama.ai/library/qwen2.5/14b", manifests) == "qwen2.5:14b"
    assert display_name(manifests / "registry.ollama.ai/jane/coder/q4", manifests) == "jane/coder:q4"
    assert display_name(manifests / "hf.co/org/Repo-GGUF/Q4_K_M", manifests) == "hf.co/org/Repo-GGUF:Q4_K_M"


def test_a_model_in_shards_is_listed_once_from_its_first(home):
    folder = home / ".lmstudio" / "models" / "org" / "big-GGUF"
    folder.mkdir(parents=True)
    for i, size in ((1, 100), (2, 300)):
        (folder / f"big-Q4_K_M-{i:05d}-of-00002.gguf").write_bytes(b"GGUF" + b"\0" * size)
    found = [m for m in find_models() if m.source == "LM Studio"]
    assert [(m.name, m.size_bytes, m.path.name) for m in found] == [
        ("org/big-GGUF/big-Q4_K_M", 408, "big-Q4_K_M-00001-of-00002.gguf")]
    assert lookup("big-Q4_K_M", found) == found


def test_ask_with_a_listed_name_answers_with_that_model(stores, tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("orlinsford.md", "saltreach.md"):
        shutil.copy(REPO / "examples" / "notes" / name, notes / name)
    code, out, err = _run(capsys, "ask", "Which river runs through Orlinsford?", "-f", str(notes), "--json",
                          "--strategy", "hybrid", "--free", "--model", "smollm2:135m")
    assert code == 0, err
    data = json.loads(out)
    assert data["answer"].strip()
    assert data["llm_calls"] and {c["model"] for c in data["llm_calls"]} == {"smollm2:135m"}


def test_a_missing_name_is_one_line_exit_2(stores, tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    shutil.copy(REPO / "examples" / "notes" / "orlinsford.md", notes / "orlinsford.md")
    code, out, err = _run(capsys, "ask", "Which river?", "-f", str(notes), "--model", "qwen2.5:14b")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "no model named 'qwen2.5:14b'" in lines[0] and "localrag models" in lines[0]
    assert not (notes / ".localrag").exists()  # found before any work
