"""Served models: the LLM protocol over an OpenAI-compatible chat API (llama.cpp server, vLLM, Ollama).

The only network use in localrag, and only when ``llm.url`` is set. JSON-schema output is
asked for in the strongest form the server accepts, and the form that worked is remembered:

1. ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`` (OpenAI, vLLM, llama.cpp, Ollama)
2. ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server: schema -> grammar)
3. ``{"type": "json_object"}`` + the schema in the system prompt
4. no response_format, the schema in the system prompt (servers without JSON mode)

A choice among many allowed answers (``answer.pick = copy``: thousands of word runs) is first
sent as a GBNF ``grammar`` field, which llama.cpp's servers take as it is: turned into a JSON-schema
enum, llama-cpp-python's server made a grammar it could not parse (HTTP 500; once it died). A server
that refuses the field gets the enum, and is not sent a grammar again.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Sequence

from localrag.config import LLMSettings
from localrag.llm.base import BuiltLLM, LLMError, Message, Reply, TokenSink, Usage
from localrag.llm.grammar import choice_grammar, choice_schema
from localrag.llm.jsoncall import parse_json
from localrag.llm.prompts_served import with_schema_instruction
from localrag.llm.served_http import HTTPClient, HTTPStatusError, RetryPolicy, ServerURL

FORMS = ("json_schema", "json_object+schema", "json_object", "prompt")
GRAMMAR_FROM = 64  # allowed answers from which a choice goes as a GBNF grammar (the pick's 8-10 stay an enum)
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def _rejects_format(exc: HTTPStatusError) -> bool:
    """The server refused the request shape (not overloaded): try the next response_format form.

    llama-cpp-python's server answers an unknown response_format type with HTTP 500 and a
    validation message, so a 5xx counts only when it names the field.
    """
    if exc.status in (400, 422):
        return True
    text = exc.message.lower()
    return exc.status >= 500 and ("response_format" in text or "json_schema" in text)


def _rejects_grammar(exc: HTTPStatusError) -> bool:
    """The server refused a ``grammar`` field (unknown argument, or a grammar it cannot use)."""
    return exc.status in (400, 422) or (exc.status >= 500 and "grammar" in exc.message.lower())


def _schema_name(schema: dict) -> str:
    name = _NAME_CHARS.sub("_", str(schema.get("title") or "reply")).strip("_") or "reply"
    return f"localrag_{name}"[:64]


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", 0) if isinstance(details, dict) else 0
    try:
        return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0), int(cached or 0))
    except (TypeError, ValueError):
        return None


class OpenAICompatLLM:
    def __init__(self, settings: LLMSettings, model: str = ""):
        self.settings = settings
        self.url = ServerURL.parse(settings.url)
        self.http = HTTPClient(
            self.url, api_key_env=settings.api_key_env, timeout_s=settings.timeout_s,
            connect_timeout_s=settings.connect_timeout_s,
            policy=RetryPolicy(settings.retries, settings.retry_backoff_s, max_wait_s=settings.timeout_s),
        )
        self._model = (model or settings.url_model).strip()
        self._lock = threading.Lock()
        self._form = 0  # index into FORMS of the first form to try
        self._stream_usage = True  # send stream_options.include_usage until a server refuses it
        self._takes_grammar = True  # send a GBNF grammar for many choices until a server refuses it

    def __repr__(self) -> str:
        return (f"OpenAICompatLLM(url={self.url.display!r}, model={self._model or '(first listed)'!r}, "
                f"api_key_env={self.settings.api_key_env!r})")

    @property
    def model_id(self) -> str:
        return self._model or self.url.display

    @property
    def response_format_form(self) -> str:
        """The response_format form this backend uses for schema calls (after any fallback)."""
        return FORMS[self._form]

    # -- models ----------------------------------------------------------------
    def list_models(self) -> list[str]:
        data = self.http.get_json("models")
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise LLMError(f"the model server at {self.url.display} sent no model list from GET /models — "
                           "is --llm-url an OpenAI-compatible API?")
        return [str(m["id"]) for m in items if isinstance(m, dict) and m.get("id")]

    def resolve_model(self) -> str:
        if not self._model:
            models = self.list_models()
            if not models:
                raise LLMError(f"the model server at {self.url.display} lists no models; name one with --llm-model")
            with self._lock:
                self._model = self._model or models[0]
        return self._model

    # -- chat --------------------------------------------------------------------
    def chat(self, messages: list[Message], *, schema: dict | None = None, max_tokens: int = 512,
             phase: str = "answer", on_token: TokenSink | None = None, choices: Sequence[str] | None = None) -> Reply:
        if choices is not None:
            return self._chat_choice(messages, list(choices), max_tokens, on_token)
        model = self.resolve_model()
        started = time.perf_counter()
        if schema is None:
            reply = self._complete(self._body(messages, model, max_tokens, None, ""), on_token)
        else:
            reply = self._chat_schema(messages, model, schema, max_tokens, on_token)
            try:
                reply.data = parse_json(reply.text)
            except (json.JSONDecodeError, ValueError):
                reply.data = None
        reply.ms = (time.perf_counter() - started) * 1000
        reply.model = reply.model or model
        return reply

    def _chat_choice(self, messages: list[Message], choices: list[str], max_tokens: int,
                     on_token: TokenSink | None) -> Reply:
        """One of ``choices``, asked for as a JSON schema whose one field is an enum (guided decoding).

        Not streamed: the wire text is JSON. A server that ignored the constraint (a prompt-only
        form) may still reply with something else; the caller checks the reply against the choices.
        """
        if len(choices) >= GRAMMAR_FROM and self._takes_grammar:
            reply = self._chat_grammar(messages, choices, max_tokens)
            if reply is not None:
                if on_token is not None and reply.text:
                    on_token(reply.text)
                return reply
        reply = self.chat(messages, schema=choice_schema(choices), max_tokens=max_tokens + 16)
        answer = reply.data.get("answer") if isinstance(reply.data, dict) else None
        reply.text = str(answer) if isinstance(answer, str) else reply.text
        if on_token is not None and reply.text:
            on_token(reply.text)
        return reply

    def _chat_grammar(self, messages: list[Message], choices: list[str], max_tokens: int) -> Reply | None:
        """One of ``choices`` under a GBNF grammar (llama.cpp servers); None when the server refuses it."""
        model = self.resolve_model()
        started = time.perf_counter()
        body = dict(self._body(messages, model, max_tokens, None, ""), grammar=choice_grammar(choices))
        try:
            reply = self._complete(body, None, fatal=_rejects_grammar)
        except HTTPStatusError as exc:
            if not _rejects_grammar(exc):
                raise
            with self._lock:
                self._takes_grammar = False
            return None
        reply.ms = (time.perf_counter() - started) * 1000
        reply.model = reply.model or model
        return reply

    def _chat_schema(self, messages: list[Message], model: str, schema: dict, max_tokens: int,
                     on_token: TokenSink | None) -> Reply:
        start = self._form
        first: HTTPStatusError | None = None
        for i in range(start, len(FORMS)):
            body = self._body(messages, model, max_tokens, schema, FORMS[i])
            try:
                reply = self._complete(body, on_token, fatal=_rejects_format)
            except HTTPStatusError as exc:
                if not _rejects_format(exc):
                    raise
                first = first or exc
                continue
            if i != start:
                with self._lock:
                    self._form = max(self._form, i)
            return reply
        assert first is not None
        raise LLMError(f"{first} (no response_format form was accepted: tried {', '.join(FORMS[start:])})")

    def _body(self, messages: list[Message], model: str, max_tokens: int, schema: dict | None, form: str) -> dict:
        msgs = list(messages)
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens,
                                "temperature": self.settings.temperature, "seed": self.settings.seed}
        if schema is not None:
            if form == "json_schema":
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": _schema_name(schema), "schema": schema, "strict": True}}
            elif form == "json_object+schema":
                body["response_format"] = {"type": "json_object", "schema": schema}
            else:
                msgs = with_schema_instruction(msgs, schema)
                if form == "json_object":
                    body["response_format"] = {"type": "json_object"}
        body["messages"] = msgs
        return body

    def _complete(self, body: dict, on_token: TokenSink | None, fatal=None) -> Reply:
        if on_token is None:
            return self._from_response(self.http.post_json("chat/completions", body, fatal=fatal))
        return self._stream(body, on_token, fatal)

    def _from_response(self, data: Any) -> Reply:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise LLMError(f"the model server at {self.url.display} sent a reply without choices")
        choice = choices[0]
        message = choice.get("message") or {}
        text = (message.get("content") or "") if isinstance(message, dict) else ""
        return Reply(text=str(text), usage=_usage(data.get("usage")) or Usage(),
                     model=str(data.get("model") or ""), finish_reason=str(choice.get("finish_reason") or ""))

    def _stream(self, body: dict, on_token: TokenSink, fatal) -> Reply:
        emitted: list[str] = []

        def attempt() -> Reply:
            payload = dict(body, stream=True)
            if self._stream_usage:
                payload["stream_options"] = {"include_usage": True}
            finish, model, usage, pieces = "", "", None, 0
            for event in self.http.stream_events("chat/completions", payload):
                model = model or str(event.get("model") or "")
                usage = _usage(event.get("usage")) or usage
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    piece = delta.get("content") or ""
                    if piece:
                        emitted.append(piece)
                        pieces += 1
                        on_token(piece)
                    finish = choice.get("finish_reason") or finish
            if not finish:
                # llama-cpp-python's server ends a stream early with [DONE] when another request
                # arrives (--interrupt_requests, on by default): never pass that off as a whole reply
                raise LLMError(f"the model server at {self.url.display} ended the stream before the reply was "
                               "finished (no finish_reason); a llama-cpp-python server does this when another "
                               "request arrives: start it with --interrupt_requests False")
            # servers that report no usage when streaming: one chunk is one token in llama.cpp and vLLM
            return Reply(text="".join(emitted), usage=usage or Usage(0, pieces), model=model, finish_reason=finish)

        try:
            # tokens already shown cannot be taken back: a stream that breaks after the first one is not retried
            return self.http.with_retries(attempt, fatal=fatal, can_retry=lambda: not emitted)
        except HTTPStatusError as exc:
            if exc.status in (400, 422) and "stream_options" in exc.message and self._stream_usage:
                self._stream_usage = False
                return self.http.with_retries(attempt, fatal=fatal, can_retry=lambda: not emitted)
            raise


def backend(settings: LLMSettings, model: str) -> BuiltLLM:
    """The "openai" entry of the backend registry: ``model`` (or llm.url_model, or the first listed) on llm.url."""
    llm = OpenAICompatLLM(settings, model=model or settings.url_model)
    return BuiltLLM(llm, f"server {llm.url.display} (model {model or settings.url_model or 'first listed'})")
