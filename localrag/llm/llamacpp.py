"""In-process llama.cpp backend (llama-cpp-python): JSON schema -> grammar, streaming, usage."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from localrag.config import LLMSettings
from localrag.llm.base import BuiltLLM, LLMError, Message, Reply, Scored, TokenSink, Usage
from localrag.llm.discovery import check_gguf, discover
from localrag.llm.gguf_info import quiet_stderr
from localrag.llm.gpu import offload_for
from localrag.llm.grammar import choice_grammar
from localrag.llm.model_info import gguf_size


class LlamaCppLLM:
    def __init__(self, path: Path, settings: LLMSettings, name: str = ""):
        """``name``: how the model is shown and keyed (Ollama's name for one of its blobs), else the file's stem."""
        check_gguf(path)
        try:
            # heavy native library: loaded when a model is, so a no-model command never pays for it
            from llama_cpp import Llama
        except ImportError as exc:
            raise LLMError(f"llama-cpp-python is not installed ({exc}); run `make install`") from exc
        self.path = path
        self.model_id = name or path.stem
        self.settings = settings
        self._lock = threading.Lock()
        threads = settings.n_threads or (os.cpu_count() or 2)
        self.offload = offload_for(path, settings.gpu_layers, settings.n_ctx)
        try:
            with quiet_stderr():
                self._llm = Llama(
                    model_path=str(path), n_ctx=settings.n_ctx, n_threads=threads, n_threads_batch=threads,
                    n_gpu_layers=self.offload.gpu_layers, seed=settings.seed, verbose=False, flash_attn=True,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMError(
                f"llama.cpp could not load {path}: {exc}. The file may be truncated or corrupt "
                "(compare its size and checksum with the source), or need a newer llama-cpp-python."
            ) from exc

    def model_size(self):
        return gguf_size(self.path, self.model_id)

    def _choice_grammar(self, choices: tuple[str, ...]):
        """llama.cpp grammar admitting exactly one of ``choices`` (parsing is cached for a repeat)."""
        # heavy native library: loaded when a model is, so a no-model command never pays for it
        from llama_cpp import LlamaGrammar

        if getattr(self, "_grammar_key", None) != choices:
            with quiet_stderr():
                self._grammar = LlamaGrammar.from_string(choice_grammar(choices), verbose=False)
            self._grammar_key = choices
        return self._grammar

    @property
    def n_ctx(self) -> int:
        return self._llm.n_ctx()

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def chat(self, messages: list[Message], *, schema: dict | None = None, max_tokens: int = 512,
             phase: str = "answer", on_token: TokenSink | None = None, choices: Sequence[str] | None = None) -> Reply:
        kwargs: dict = {"temperature": self.settings.temperature, "max_tokens": max_tokens, "seed": self.settings.seed}
        if choices is not None:
            kwargs["grammar"] = self._choice_grammar(tuple(choices))
        elif schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        with self._lock:
            before = self._llm.n_tokens
            prev = list(self._llm._input_ids[:before]) if before else []
            started = time.perf_counter()
            try:
                if on_token is None:
                    out = self._llm.create_chat_completion(messages=list(messages), **kwargs)
                    text = out["choices"][0]["message"].get("content") or ""
                    finish = out["choices"][0].get("finish_reason") or ""
                    usage = Usage(out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"])
                else:
                    text, finish, n_out = "", "", 0
                    for chunk in self._llm.create_chat_completion(messages=list(messages), stream=True, **kwargs):
                        choice = chunk["choices"][0]
                        piece = choice.get("delta", {}).get("content") or ""
                        if piece:
                            text += piece
                            n_out += 1
                            on_token(piece)
                        finish = choice.get("finish_reason") or finish
                    total = self._llm.n_tokens
                    usage = Usage(max(0, total - n_out), n_out)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMError(f"{self.model_id}: {exc}") from exc
            ms = (time.perf_counter() - started) * 1000
            usage.cached_tokens = _common_prefix(prev, list(self._llm._input_ids[: usage.prompt_tokens]))
        return Reply(text=text, usage=usage, ms=ms, model=self.model_id, finish_reason=finish)

    def score_replies(self, messages: list[Message], replies: Sequence[str]) -> Scored:
        """Each reply's log-probability as the model's whole answer to ``messages``: its tokens and
        the chat template's end of turn after it, one forward step a token after a shared prompt
        (the prompt's KV cache is kept; no logits are kept for the whole context)."""
        prompt, tails = self._reply_turns(messages, replies)
        with self._lock:
            llm = self._llm
            started = time.perf_counter()
            cached = _common_prefix(list(llm._input_ids[:llm.n_tokens]), prompt)
            llm.n_tokens = min(cached, len(prompt) - 1)
            try:
                # the prompt's last token alone, every time: its logits then do not depend on what the
                # cache held before (a batched step differs from a single one in the last decimals)
                llm.eval(prompt[llm.n_tokens:-1])
                llm.eval(prompt[-1:])
                base, after_prompt = llm.n_tokens, self._next_logprobs()
                logprobs, evaluated = [], 0
                for tail in tails:
                    llm.n_tokens, total, step = base, 0.0, after_prompt
                    for i, token in enumerate(tail):
                        total += float(step[token])
                        if i + 1 < len(tail):
                            llm.eval([token])
                            step, evaluated = self._next_logprobs(), evaluated + 1
                    logprobs.append(total)
            except (ValueError, RuntimeError) as exc:  # e.g. prompt longer than the context window
                raise LLMError(f"{self.model_id}: {exc}") from exc
            ms = (time.perf_counter() - started) * 1000
        return Scored(logprobs, Usage(len(prompt), evaluated, cached_tokens=min(cached, len(prompt) - 1)), ms,
                      self.model_id)

    def _reply_turns(self, messages: list[Message], replies: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """The prompt's tokens (up to where the reply starts) and each reply's tokens with the end of turn,
        from the chat template in the GGUF file."""
        asking_format, answered = self._turn_formats()
        try:
            asking = asking_format(messages=list(messages))
            wholes = [answered(messages=[*messages, {"role": "assistant", "content": r}]).prompt for r in replies]
        except Exception as exc:  # the GGUF file's own template code: jinja2's errors or whatever it raises
            raise LLMError(f"{self.model_id}'s chat template failed on the replies to score: {exc}") from exc
        if not all(w.startswith(asking.prompt) for w in wholes):
            raise LLMError(f"{self.model_id}'s chat template does not continue its prompt with the reply")
        prompt = self._llm.tokenize(asking.prompt.encode("utf-8"), add_bos=not getattr(asking, "added_special", False),
                                    special=True)
        return prompt, [self._llm.tokenize(w[len(asking.prompt):].encode("utf-8"), add_bos=False, special=True)
                        for w in wholes]

    def _turn_formats(self):
        """The GGUF file's chat template compiled twice, once per template (not per question): ending
        where the reply starts, and ending after the reply's end of turn."""
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise LLMError(f"{self.model_id} has no chat template in its GGUF file to score replies with")
        if getattr(self, "_formats_of", None) != template:
            # heavy native library: loaded when a model is, so a no-model command never pays for it
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            special = {k: self._llm.detokenize([t], special=True).decode("utf-8", "replace") if t >= 0 else ""
                       for k, t in (("eos_token", self._llm.token_eos()), ("bos_token", self._llm.token_bos()))}
            try:
                self._formats = (Jinja2ChatFormatter(template, **special),
                                 Jinja2ChatFormatter(template, add_generation_prompt=False, **special))
            except Exception as exc:  # the GGUF file's own template code: jinja2's errors or whatever it raises
                raise LLMError(f"{self.model_id}'s chat template does not compile: {exc}") from exc
            self._formats_of = template
        return self._formats

    def _next_logprobs(self) -> np.ndarray:
        """Log-probabilities of the next token after the last one evaluated."""
        # heavy native library: loaded when a model is, so a no-model command never pays for it
        import llama_cpp

        n_vocab = self._llm.n_vocab()
        raw = llama_cpp.llama_get_logits_ith(self._llm.ctx, -1)
        logits = np.ctypeslib.as_array(ctypes.cast(raw, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))
        shifted = logits.astype(np.float64) - float(logits.max())
        return shifted - np.log(np.exp(shifted).sum())


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def backend(settings: LLMSettings, model: str) -> BuiltLLM:
    """The "llamacpp" entry of the backend registry: ``model`` (or llm.model, or discovery) in process."""
    choice = discover(model or settings.model)
    return BuiltLLM(LlamaCppLLM(choice.path, settings, choice.name), f"{choice.source}: {choice.path}")
