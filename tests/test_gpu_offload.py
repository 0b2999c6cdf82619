"""Which llama.cpp backend the build has and how many layers go to the GPU: the plan from the GPUs'
free memory and the GGUF header, `llm.gpu_layers` over it, and `doctor` naming the backend
(checked here on the CPU build this machine has)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import localrag.embed
from localrag.cli import main
from localrag.config import LLMSettings
from localrag.llm.gguf_info import GGUFInfo, read_gguf_info
from localrag.llm.gpu import AUTO, Backend, Device, llama_backend, plan_offload

GiB = 2**30
CPU = Device("CPU", "x86", "CPU", "CPU", 16 * GiB, 16 * GiB)
# a 7B-class model: 28 blocks, 4.7 GB file, 56 KiB of KV cache a token
SEVEN_B = GGUFInfo(7_600_000_000, "7B", "qwen2", "Q4_K_M", 32768, 28, True, 57_344)
FILE = 4_700_000_000


def gpu(free_gib: float, backend: str = "CUDA") -> Device:
    return Device(f"{backend}0", "test GPU", "GPU", backend, int(free_gib * GiB), 24 * GiB)


def test_every_layer_goes_to_a_gpu_it_fits_on():
    plan = plan_offload(AUTO, Backend((gpu(20), CPU)), SEVEN_B, FILE, 4096)
    assert (plan.gpu_layers, plan.offloaded, plan.total) == (-1, 29, 29)
    assert plan.describe().startswith("29 of 29 layers on the GPU")


def test_a_small_gpu_gets_the_layers_that_fit_beside_the_kv_cache():
    plan = plan_offload(AUTO, Backend((gpu(3), CPU)), SEVEN_B, FILE, 4096)
    per_layer = FILE / 29
    expected = int((3 * GiB - 57_344 * 4096 - 768 * 2**20) // per_layer)
    assert plan.gpu_layers == plan.offloaded == expected and 0 < expected < 29
    # a longer context leaves less room for weights
    assert plan_offload(AUTO, Backend((gpu(3), CPU)), SEVEN_B, FILE, 16384).offloaded < expected
    assert plan_offload(AUTO, Backend((gpu(0.5), CPU)), SEVEN_B, FILE, 4096).gpu_layers == 0


def test_the_setting_overrides_and_a_cpu_build_offloads_nothing():
    assert plan_offload(12, Backend((gpu(20), CPU)), SEVEN_B, FILE, 4096).gpu_layers == 12
    assert plan_offload(0, Backend((gpu(20), CPU)), SEVEN_B, FILE, 4096).offloaded == 0
    cpu_only = plan_offload(AUTO, Backend((CPU,)), SEVEN_B, FILE, 4096)
    assert (cpu_only.gpu_layers, cpu_only.offloaded, cpu_only.total) == (0, 0, 29)
    assert Backend((gpu(8, "Metal"), CPU)).name == "Metal" and Backend((CPU,)).name == "CPU"


def test_this_build_lists_its_devices(bundled_model):
    backend = llama_backend()
    assert not backend.error and any(d.kind == "CPU" for d in backend.devices)
    info = read_gguf_info(bundled_model)
    plan = plan_offload(AUTO, backend, info, bundled_model.stat().st_size, 4096)
    if backend.gpus:  # a GPU build: SmolLM2 fits on any GPU
        assert plan.offloaded == info.layers + 1 == 31
    else:
        assert backend.name == "CPU" and plan.gpu_layers == 0


def test_the_loaded_model_uses_the_plan(bundled_model):
    from localrag.llm.llamacpp import LlamaCppLLM

    auto = LlamaCppLLM(bundled_model, LLMSettings(n_ctx=512))
    assert auto.offload.gpu_layers == (-1 if llama_backend().gpus else 0)
    fixed = LlamaCppLLM(bundled_model, LLMSettings(n_ctx=512, gpu_layers=3))
    assert fixed.offload.gpu_layers == 3 and fixed.offload.reason == "llm.gpu_layers"


def test_doctor_names_the_backend_and_the_layers(tmp_path: Path, embedder, monkeypatch, capsys):
    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    for name in [k for k in os.environ if k.startswith("LOCALRAG_")]:
        monkeypatch.delenv(name)
    notes = tmp_path / "notes"
    notes.mkdir()
    code = main(["doctor", "--skip-model", str(notes)])
    out = " ".join(capsys.readouterr().out.split())  # rich wraps at 80 columns
    line = out[out.index("llama.cpp backend:"):]
    backend = llama_backend()
    assert code == 0 and f"llama.cpp backend: {backend.name}" in line
    assert "layers on the GPU" in line
    if not backend.gpus:
        assert "0 of 31 layers" in line and "no GPU backend" in line


@pytest.mark.parametrize("layers", [-1, 0])
def test_the_setting_reads_from_config(tmp_path: Path, layers: int):
    from localrag.config import load_settings

    (tmp_path / ".localrag").mkdir()
    (tmp_path / ".localrag" / "config.toml").write_text(f"[llm]\ngpu_layers = {layers}\n", encoding="utf-8")
    assert load_settings(tmp_path, env={}).llm.gpu_layers == layers


def test_a_negative_layer_count_other_than_auto_is_refused(tmp_path: Path):
    from localrag.config import ConfigError, load_settings

    with pytest.raises(ConfigError, match="llm.gpu_layers must be -1"):
        load_settings(tmp_path, {"llm.gpu_layers": -2}, env={})
