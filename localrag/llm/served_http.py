"""HTTP for the served backend: one base URL, JSON in and out, SSE, retries with backoff.

Standard library only (http.client): no proxies from the environment and no redirects,
so a request goes to the configured server and nowhere else, and the API key (read from
an environment variable for each request) is never carried to another host. The key
never appears in an error message, a log line or a repr: the server's own error text
is scrubbed of it before it is shown.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import random
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import urlsplit

from localrag.llm.base import LLMError

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_ERROR_BODY = 65536


@dataclass(frozen=True)
class ServerURL:
    scheme: str
    host: str
    port: int
    base_path: str  # always ends with /v1

    @property
    def display(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}"

    def endpoint(self, name: str) -> str:
        return f"{self.base_path}/{name.lstrip('/')}"

    @classmethod
    def parse(cls, url: str) -> "ServerURL":
        """``http://host:8000`` or ``http://host:8000/v1`` -> the /v1 base; other schemes are refused."""
        text = url.strip()
        parts = urlsplit(text if "://" in text else f"http://{text}")
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise LLMError(f"--llm-url must start with http:// or https:// (got a {scheme}: URL); "
                           "localrag talks to OpenAI-compatible servers over HTTP only")
        if parts.username or parts.password:
            raise LLMError("--llm-url must not contain a user name or password: put the API key in the "
                           "environment variable named by llm.api_key_env (default LOCALRAG_API_KEY)")
        if parts.query or parts.fragment:
            raise LLMError("--llm-url must be a base URL such as http://gpu-box:8000/v1 (no query string)")
        try:
            host, port = parts.hostname, parts.port
        except ValueError as exc:
            raise LLMError(f"--llm-url has an invalid port: {exc}") from exc
        if not host:
            raise LLMError("--llm-url has no host name; expected e.g. http://127.0.0.1:8080/v1")
        path = parts.path.rstrip("/")
        if not path.endswith("/v1"):
            path = f"{path}/v1"
        return cls(scheme, host, port or (443 if scheme == "https" else 80), path)


class HTTPStatusError(LLMError):
    """The server answered with an error status; ``message`` is its (scrubbed) explanation."""

    def __init__(self, text: str, status: int, message: str, retry_after: float | None = None):
        super().__init__(text)
        self.status, self.message, self.retry_after = status, message, retry_after


class TransportError(LLMError):
    """No usable HTTP answer: refused, timed out, reset, name not found."""

    def __init__(self, text: str, kind: str):
        super().__init__(text)
        self.kind = kind  # refused | connect-timeout | read-timeout | broken | dns | tls | other


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 60.0

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter: base * 2^attempt, scaled by a random factor in [0.5, 1.5)."""
        return self.backoff_s * (2 ** attempt) * (0.5 + random.random())


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class HTTPClient:
    def __init__(self, url: ServerURL, *, api_key_env: str, timeout_s: float, connect_timeout_s: float,
                 policy: RetryPolicy):
        self.url = url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.policy = policy
        self.reached = False  # set once the server has answered: later refusals may be a restart

    def __repr__(self) -> str:
        return f"HTTPClient({self.url.display!r}, api_key_env={self.api_key_env!r})"

    # -- secrets -----------------------------------------------------------------
    def _key(self) -> str:
        return os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""

    def scrub(self, text: str) -> str:
        key = self._key()
        if key:
            text = text.replace(key, "***")
        return text

    # -- one attempt ----------------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.url.host, self.url.port, timeout=min(self.connect_timeout_s, self.timeout_s))
        try:
            conn.connect()
        except BaseException:
            conn.close()
            raise
        conn.sock.settimeout(self.timeout_s)
        return conn

    def _open(self, method: str, endpoint: str, body: dict | None, *, stream: bool = False):
        headers = {"Accept": "text/event-stream" if stream else "application/json", "User-Agent": "localrag"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        conn: http.client.HTTPConnection | None = None
        try:
            conn = self._connect()
            conn.request(method, self.url.endpoint(endpoint), body=payload, headers=headers)
            resp = conn.getresponse()
        except BaseException as exc:
            connected = conn is not None
            if conn is not None:
                conn.close()
            if isinstance(exc, (OSError, http.client.HTTPException)):
                raise self.transport_error(exc, connected=connected) from None
            raise
        self.reached = True
        if resp.status >= 400:
            try:
                raw = resp.read(MAX_ERROR_BODY)
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                conn.close()
            raise self.status_error(resp.status, raw, resp.getheader("Retry-After"))
        return conn, resp

    def transport_error(self, exc: BaseException, *, connected: bool) -> TransportError:
        where = self.url.display
        if isinstance(exc, ConnectionRefusedError):
            return TransportError(f"cannot reach the model server at {where}: connection refused — "
                                  "is it running? check --llm-url", "refused")
        if isinstance(exc, socket.gaierror):
            return TransportError(f"cannot reach the model server at {where}: host name not found — "
                                  "check --llm-url", "dns")
        if isinstance(exc, ssl.SSLError):
            return TransportError(f"TLS error talking to the model server at {where}: {exc.__class__.__name__} "
                                  "— check the https URL and the server's certificate", "tls")
        if isinstance(exc, TimeoutError):
            if not connected:
                return TransportError(f"cannot reach the model server at {where}: no answer within "
                                      f"{min(self.connect_timeout_s, self.timeout_s):g} s — is the host up? "
                                      "check --llm-url", "connect-timeout")
            return TransportError(f"the model server at {where} did not reply within {self.timeout_s:g} s "
                                  "(llm.timeout_s): it may be overloaded, or the model too slow for this "
                                  "timeout", "read-timeout")
        if isinstance(exc, (ConnectionError, http.client.HTTPException)):
            return TransportError(f"the connection to the model server at {where} broke "
                                  f"({exc.__class__.__name__}) — did the server stop or restart?", "broken")
        reason = getattr(exc, "strerror", None) or exc.__class__.__name__
        return TransportError(f"cannot reach the model server at {where}: {self.scrub(str(reason))} — "
                              "check --llm-url", "other")

    def status_error(self, status: int, raw: bytes, retry_after: str | None) -> HTTPStatusError:
        message = _error_message(raw)
        message = self.scrub(message)[:400]
        hint = ""
        if status in (401, 403):
            hint = (f" — the server wants an API key: set it in the environment variable ${self.api_key_env} "
                    "(llm.api_key_env)")
        elif status == 404:
            hint = " — check --llm-url (the base, e.g. http://host:8000/v1) and --llm-model"
        text = f"the model server at {self.url.display} answered HTTP {status}: {message or 'no details'}{hint}"
        return HTTPStatusError(text, status, message, parse_retry_after(retry_after))

    # -- with retries -----------------------------------------------------------
    def with_retries(self, attempt: Callable[[], T], *, fatal: Callable[[HTTPStatusError], bool] | None = None,
                     can_retry: Callable[[], bool] | None = None) -> T:
        """Run ``attempt``; retry 429/5xx and connection errors with backoff (honouring Retry-After)."""
        tries = max(0, self.policy.retries) + 1
        for n in range(tries):
            last = n == tries - 1
            try:
                return attempt()
            except HTTPStatusError as exc:
                if last or exc.status not in RETRY_STATUS or (fatal and fatal(exc)) or (can_retry and not can_retry()):
                    raise
                wait = max(self.policy.delay(n), exc.retry_after or 0.0)
                why = f"HTTP {exc.status}"
            except TransportError as exc:
                # never reached and refused: a wrong URL or a stopped server, say so at once
                never_up = exc.kind in ("refused", "dns") and not self.reached
                if last or never_up or exc.kind in ("tls", "read-timeout") or (can_retry and not can_retry()):
                    raise
                wait = self.policy.delay(n)
                why = exc.kind
            wait = min(wait, self.policy.max_wait_s)
            log.info("model server %s: %s, retry %d/%d in %.2f s", self.url.display, why, n + 1, tries - 1, wait)
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def get_json(self, endpoint: str) -> Any:
        return self.with_retries(lambda: self._read_json(*self._open("GET", endpoint, None)))

    def post_json(self, endpoint: str, body: dict, *, fatal: Callable[[HTTPStatusError], bool] | None = None) -> Any:
        return self.with_retries(lambda: self._read_json(*self._open("POST", endpoint, body)), fatal=fatal)

    def _read_json(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> Any:
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise self.transport_error(exc, connected=True) from None
        finally:
            conn.close()
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise LLMError(f"the model server at {self.url.display} sent a reply that is not JSON "
                           f"({len(raw)} bytes) — is --llm-url an OpenAI-compatible API?") from None

    def stream_events(self, endpoint: str, body: dict) -> Iterator[dict]:
        """One streaming POST (no retries here): the JSON payload of each SSE ``data:`` line until [DONE]."""
        conn, resp = self._open("POST", endpoint, body, stream=True)
        try:
            while True:
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as exc:
                    raise self.transport_error(exc, connected=True) from None
                if not line:
                    raise TransportError(f"the stream from the model server at {self.url.display} ended before "
                                         "the reply was complete — did the server stop or restart?", "broken")
                text = line.decode("utf-8", "replace").strip()
                if not text.startswith("data:"):
                    continue  # blank separators, ": ping" comments, event names
                data = text[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict) and event.get("error"):
                    raise LLMError(f"the model server at {self.url.display} reported an error mid-stream: "
                                   f"{self.scrub(_error_message(data.encode()))[:400]}")
                if isinstance(event, dict):
                    yield event
        finally:
            conn.close()


def _error_message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return " ".join(text.split())[:400]
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message") or json.dumps(err)
        if err is not None:
            return " ".join(str(err).split())
    return " ".join(text.split())[:400]
