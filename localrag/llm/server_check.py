"""`localrag doctor` checks for a served model: reachable, model listed, JSON mode works."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from localrag.config import Settings
from localrag.llm.base import LLMError
from localrag.llm.jsoncall import call_json
from localrag.llm.prompts_served import PROBE_SCHEMA, probe_error, probe_messages
from localrag.llm.openai_compat import OpenAICompatLLM


@dataclass
class ServerCheck:
    name: str
    ok: bool
    detail: str


def _key_note(env_name: str) -> str:
    if env_name and os.environ.get(env_name, "").strip():
        return f"; sending the API key from ${env_name}"
    return f"; no API key (${env_name} is not set)" if env_name else ""


def check_server(settings: Settings) -> list[ServerCheck]:
    """Never raises for a server problem: each failure is a ServerCheck with the reason."""
    llm_settings = settings.llm
    try:
        llm = OpenAICompatLLM(llm_settings, model=llm_settings.url_model)
    except LLMError as exc:
        return [ServerCheck("model server", False, str(exc))]
    started = time.perf_counter()
    try:
        models = llm.list_models()
    except LLMError as exc:
        return [ServerCheck("model server reachable", False, str(exc))]
    ms = (time.perf_counter() - started) * 1000
    checks = [ServerCheck("model server reachable", True,
                    f"{llm.url.display}: {len(models)} model(s) listed in {ms:.0f} ms{_key_note(llm_settings.api_key_env)}")]

    wanted = [("model", llm_settings.url_model)]
    if llm_settings.index_model and not llm_settings.index_model.lower().endswith(".gguf"):
        wanted.append(("index model", llm_settings.index_model))
    for label, name in wanted:
        if not name:
            ok = bool(models)
            detail = f"none named (--llm-model): using the first listed, {models[0]}" if ok else \
                "the server lists no models; name one with --llm-model"
        else:
            ok = name in models
            detail = f"{name} is listed" if ok else \
                f"{name} is not among the listed models ({', '.join(models[:5]) or 'none'})"
        checks.append(ServerCheck(f"server {label} listed", ok, detail))
    if not models and not llm_settings.url_model:
        return checks

    started = time.perf_counter()
    try:
        result = call_json(llm, probe_messages(), PROBE_SCHEMA, phase="doctor", max_tokens=64,
                           validate=probe_error, retries=1)
    except LLMError as exc:
        checks.append(ServerCheck("server JSON mode", False, str(exc)))
        return checks
    ms = (time.perf_counter() - started) * 1000
    if result.ok:
        detail = f"schema-constrained reply parsed ({llm.response_format_form} form, {ms:.0f} ms): {result.data}"
    else:
        detail = f"no valid JSON after {len(result.replies)} tries: {'; '.join(result.errors)}"
    checks.append(ServerCheck("server JSON mode", result.ok, detail))
    return checks
