"""Offline by construction: index and ask end to end with every network socket blocked.

The child processes run the real CLI (`python -m localrag`) with a sitecustomize that
replaces socket connect / create_connection / getaddrinfo (and friends) with functions
that log the attempt and raise; only AF_UNIX sockets are allowed. The same hook records
the HF/transformers offline flags at the moment those libraries are first imported: they
must already be set by localrag (the parent environment has them removed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from localrag.offline import OFFLINE_ENV

SITECUSTOMIZE = r'''
import atexit, importlib.abc, json, os, socket, sys

_REPORT = os.environ["OFFLINE_TEST_REPORT"]
_state = {"attempts": [], "imports": []}
_WATCH = ("localrag", "torch", "transformers", "huggingface_hub", "sentence_transformers", "llama_cpp", "safetensors")
_FLAGS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")


class NetworkBlocked(OSError):
    pass


def _blocked(what):
    def fail(*args, **kwargs):
        _state["attempts"].append(f"{what} {args[1:2] if what.startswith('socket.') else args[:1]}")
        raise NetworkBlocked(f"network access blocked by the offline test: {what}")
    return fail


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto


def _guard(real, what):
    def call(self, *args, **kwargs):
        if self.family == socket.AF_UNIX:
            return real(self, *args, **kwargs)
        return _blocked(what)(self, *args)
    return call


socket.socket.connect = _guard(_real_connect, "socket.connect")
socket.socket.connect_ex = _guard(_real_connect_ex, "socket.connect_ex")
socket.socket.sendto = _guard(_real_sendto, "socket.sendto")
socket.create_connection = _blocked("create_connection")
socket.getaddrinfo = _blocked("getaddrinfo")
socket.gethostbyname = _blocked("gethostbyname")
socket.gethostbyname_ex = _blocked("gethostbyname_ex")


class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in _WATCH and name not in {i["name"] for i in _state["imports"]}:
            _state["imports"].append({"name": name, "flags": {f: os.environ.get(f) for f in _FLAGS}})
        return None


sys.meta_path.insert(0, _Watch())


@atexit.register
def _write():
    try:
        import huggingface_hub.constants as c
        _state["hub_offline"] = bool(c.HF_HUB_OFFLINE)
    except Exception as exc:
        _state["hub_offline"] = repr(exc)
    with open(_REPORT, "w") as fh:
        json.dump(_state, fh)
'''

NOTES = {
    "orlinsford.md": "# Orlinsford\n\nOrlinsford is a mill town on the river Velkra. Ilse Varnhagen runs the mill.\n",
    "ilse.md": "# Ilse Varnhagen\n\nIlse Varnhagen was born in Saltreach and moved to Orlinsford in 2019.\n",
}


def _run(args: list[str], hook_dir: Path, report: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV and not k.startswith("LOCALRAG_")}
    env.update(PYTHONPATH=str(hook_dir), OFFLINE_TEST_REPORT=str(report), LOCALRAG_LLM_N_THREADS="1",
               LOCALRAG_LLM_ANSWER_MAX_TOKENS="48",
               HTTP_PROXY="http://192.0.2.1:9", HTTPS_PROXY="http://192.0.2.1:9")  # a proxy would be a way out
    return subprocess.run([sys.executable, "-m", "localrag", *args], capture_output=True, text=True, env=env,
                          timeout=900)


def _check_report(report: Path) -> dict:
    data = json.loads(report.read_text())
    assert data["attempts"] == [], f"network calls were attempted: {data['attempts']}"
    seen = {i["name"]: i["flags"] for i in data["imports"]}
    assert list(seen)[0] == "localrag", f"localrag is imported first: {list(seen)}"
    for lib in ("torch", "transformers", "huggingface_hub", "sentence_transformers"):
        if lib in seen:
            assert seen[lib]["HF_HUB_OFFLINE"] == "1" and seen[lib]["TRANSFORMERS_OFFLINE"] == "1", (lib, seen[lib])
    return data


def test_index_and_ask_with_every_socket_blocked(tmp_path, bundled_model):
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)

    # the hook itself works: a plain connection attempt is refused and logged
    probe = tmp_path / "probe.json"
    env = dict(os.environ, PYTHONPATH=str(hook_dir), OFFLINE_TEST_REPORT=str(probe))
    r = subprocess.run([sys.executable, "-c", "import socket\ntry:\n socket.create_connection(('192.0.2.1', 80), 1)\n"
                        "except OSError as e: print(type(e).__name__)"], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == "NetworkBlocked", r.stderr
    assert json.loads(probe.read_text())["attempts"]

    report = tmp_path / "index.json"
    r = _run(["index", str(notes), "--quiet", "--model", str(bundled_model), "--extractor", "llm+rules"], hook_dir, report)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    data = _check_report(report)
    names = {i["name"] for i in data["imports"]}
    # a few short notes are embedded by the numpy forward pass (safetensors), more by sentence-transformers
    assert "llama_cpp" in names and names & {"sentence_transformers", "safetensors"}, "the embedder and the model ran"
    assert data["hub_offline"] is True
    assert "graph:" in r.stdout

    report = tmp_path / "ask.json"
    r = _run(["ask", "Where was the miller of Orlinsford born?", "-f", str(notes), "--json", "--strategy", "hybrid",
              "--model", str(bundled_model), "--free"], hook_dir, report)  # free text: the model itself writes
    assert r.returncode == 0, r.stderr
    _check_report(report)
    answer = json.loads(r.stdout)
    assert answer["answer"] and answer["citations"]
    assert {c["phase"] for c in answer["llm_calls"]} >= {"answer"}
    assert answer["passages"][0]["path"] in NOTES


def test_offline_flags_are_set_by_importing_localrag():
    """Set on import, before any hub library, and a user's HF_HUB_OFFLINE=0 cannot switch them off."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    env.update(HF_HUB_OFFLINE="0", TRANSFORMERS_OFFLINE="0")
    code = ("import os, sys\nimport localrag\n"
            "assert 'transformers' not in sys.modules and 'huggingface_hub' not in sys.modules\n"
            "import huggingface_hub.constants as c\n"
            "print(os.environ['HF_HUB_OFFLINE'], os.environ['TRANSFORMERS_OFFLINE'], os.environ['HF_DATASETS_OFFLINE'], "
            "c.HF_HUB_OFFLINE)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1", "1", "True"]
