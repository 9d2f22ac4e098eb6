"""The scripted server's provider batches, as the providers document them (docs/providers.md,
*Tiers*): Anthropic's Message Batches and OpenAI's (and Moonshot's) files and batches.

- Anthropic: ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``; a custom id
  must match ``^[a-zA-Z0-9_-]{1,64}$`` and be unique, else 400), ``GET .../{id}`` (a
  ``message_batch``: ``processing_status`` ``in_progress``, ``canceling`` or ``ended``; request
  counts stay in ``processing`` until the whole batch ends), ``GET .../{id}/results`` (JSONL,
  one ``{custom_id, result}`` a request, ``succeeded`` with the Message, ``errored``, ``canceled``
  or ``expired``; ``results_url`` is absolute), ``POST .../{id}/cancel``. Params are checked
  only when processed: a bad request comes back ``errored``, never as a 400 of the batch.
- OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/{id}[/content]``,
  ``POST /v1/batches`` (``completion_window`` ``24h`` only; one model per file), ``GET
  /v1/batches/{id}`` (``validating``, ``in_progress``, ``finalizing``, ``completed``, ``failed``,
  ``expired``, ``cancelling``, ``cancelled``), ``POST /v1/batches/{id}/cancel``. Answers go to the
  output file, failed requests to the error file; requests an expired batch never ran are in the
  error file as ``batch_expired``, a cancelled batch's as ``batch_cancelled``.

Each request of a batch is answered by the server's script (mode, persona) when the batch ends.
``batch_latency``: seconds a batch stays in progress; ``batch_fates``: one per batch created, in
order (the last repeats): ``ok``, ``expire`` (the window closes with every other request
unprocessed), ``error`` (the first request errored, as an overloaded provider answers). Every
line submitted is kept in ``submitted`` (api, batch id, custom id): a test counts them.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testing.scripted_server import ScriptedServer

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCH_FATES = ("ok", "expire", "error")


@dataclass
class FakeBatch:
    id: str
    api: str  # anthropic | openai
    lines: list[tuple[str, dict[str, Any]]]  # (custom id, body)
    fate: str
    created: float
    ends: float
    input_file_id: str | None = None
    cancelled: bool = False
    outcomes: dict[str, tuple[str, Any]] | None = None  # custom id -> (kind, payload), once ended
    output_file_id: str | None = None
    error_file_id: str | None = None
    ended_at: float | None = None


@dataclass
class BatchFakes:
    server: ScriptedServer
    latency: float = 0.0
    fates: list[str] = field(default_factory=lambda: ["ok"])
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # id -> (purpose, content)
    submitted: list[tuple[str, str, str]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}scripted"

    def _create(self, api: str, lines: list[tuple[str, dict[str, Any]]], input_file_id: str | None = None) -> FakeBatch:
        with self._lock:
            fate = self.fates[min(len(self.batches), len(self.fates) - 1)]
            now = time.time()
            batch = FakeBatch(self._new_id("msgbatch_" if api == "anthropic" else "batch_"), api, lines, fate, now,
                              now + self.latency, input_file_id=input_file_id)
            self.batches[batch.id] = batch
            self.submitted.extend((api, batch.id, cid) for cid, _ in lines)
        return batch

    # ---- processing ---------------------------------------------------------------------------
    def _settle(self, batch: FakeBatch) -> None:
        """Answer the batch's requests once its time has come (or it was cancelled)."""
        with self._lock:
            if batch.outcomes is not None or (time.time() < batch.ends and not batch.cancelled):
                return
            batch.outcomes = {}
        outcomes: dict[str, tuple[str, Any]] = {}
        for i, (cid, body) in enumerate(batch.lines):
            if batch.cancelled:
                outcomes[cid] = ("canceled", None)
            elif batch.fate == "expire" and i % 2 == 1:
                outcomes[cid] = ("expired", None)
            elif batch.fate == "error" and i == 0:
                outcomes[cid] = ("errored", (529 if batch.api == "anthropic" else 500, "overloaded_error",
                                             "Overloaded"))
            else:
                status, payload = self.server.answer_now(batch.api == "anthropic", body)
                if status == 200:
                    outcomes[cid] = ("succeeded", payload)
                else:
                    error = payload.get("error") or {}
                    outcomes[cid] = ("errored", (status, error.get("type", "api_error"), error.get("message", "")))
        with self._lock:
            batch.outcomes = outcomes
            batch.ended_at = time.time()
            if batch.api == "openai":
                out: list[str] = []
                err: list[str] = []
                for cid, (kind, payload) in outcomes.items():
                    line = _openai_result_line(self._new_id("batch_req_"), cid, kind, payload)
                    (out if kind == "succeeded" else err).append(json.dumps(line))
                if out:
                    batch.output_file_id = self._store_file("batch_output", "\n".join(out) + "\n")
                if err:
                    batch.error_file_id = self._store_file("batch_output", "\n".join(err) + "\n")

    def _store_file(self, purpose: str, text: str) -> str:
        file_id = self._new_id("file-")
        self.files[file_id] = (purpose, text.encode())
        return file_id

    # ---- HTTP ---------------------------------------------------------------------------------
    @staticmethod
    def handles(path: str) -> bool:
        """Whether ``path`` is a batch or file endpoint."""
        return re.search(r"/v1/(messages/batches|batches|files)(/|$)", path.split("?", 1)[0]) is not None

    def handle(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> tuple[int, Any, str] | None:
        """(status, payload, content type) for a batch or file endpoint; None for any other path."""
        path = path.split("?", 1)[0].rstrip("/")
        m = re.search(r"/v1/messages/batches(?:/([^/]+))?(?:/(results|cancel))?$", path)
        if m:
            return self._anthropic(method, m.group(1), m.group(2), raw)
        m = re.search(r"/v1/batches(?:/([^/]+))?(?:/(cancel))?$", path)
        if m:
            return self._openai_batches(method, m.group(1), m.group(2), raw)
        m = re.search(r"/v1/files(?:/([^/]+))?(?:/(content))?$", path)
        if m:
            return self._files(method, m.group(1), m.group(2), raw, headers)
        return None

    def _anthropic(self, method: str, batch_id: str | None, action: str | None, raw: bytes) -> tuple[int, Any, str]:
        def error(status: int, kind: str, message: str) -> tuple[int, Any, str]:
            return status, {"type": "error", "error": {"type": kind, "message": message}}, "application/json"

        if method == "POST" and batch_id is None:
            try:
                requests = json.loads(raw)["requests"]
                lines = [(r["custom_id"], r["params"]) for r in requests]
            except (KeyError, TypeError, ValueError):
                return error(400, "invalid_request_error", "requests: Field required")
            ids = [cid for cid, _ in lines]
            bad = next((cid for cid in ids if not isinstance(cid, str) or not CUSTOM_ID.match(cid)), None)
            if bad is not None:
                return error(400, "invalid_request_error", f"requests.custom_id: String should match pattern "
                                                           f"'^[a-zA-Z0-9_-]{{1,64}}$' (got {bad!r})")
            if len(set(ids)) != len(ids):
                return error(400, "invalid_request_error", "requests: custom_id values must be unique")
            return 200, self._message_batch(self._create("anthropic", lines)), "application/json"
        batch = self.batches.get(batch_id or "")
        if batch is None or batch.api != "anthropic":
            return error(404, "not_found_error", f"message batch {batch_id!r} not found")
        if action == "cancel" and method == "POST":
            batch.cancelled = batch.outcomes is None
            return 200, self._message_batch(batch), "application/json"
        self._settle(batch)
        if action == "results":
            if batch.outcomes is None:
                return error(400, "invalid_request_error", "the batch is still processing: no results yet")
            results = [json.dumps({"custom_id": cid, "result": _anthropic_result(kind, payload)})
                       for cid, (kind, payload) in batch.outcomes.items()]
            return 200, ("\n".join(results) + "\n").encode(), "application/binary"
        return 200, self._message_batch(batch), "application/json"

    def _message_batch(self, batch: FakeBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.outcomes is None:
            counts["processing"] = len(batch.lines)
            status = "canceling" if batch.cancelled else "in_progress"
        else:
            for kind, _ in batch.outcomes.values():
                counts[kind] += 1
            status = "ended"
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
            "ended_at": _iso(batch.ended_at), "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + 86400), "archived_at": None,
            "cancel_initiated_at": _iso(batch.created) if batch.cancelled else None,
            "results_url": (f"{self.server.url.removesuffix('/v1')}/v1/messages/batches/{batch.id}/results"
                            if status == "ended" else None),
        }

    def _files(self, method: str, file_id: str | None, action: str | None, raw: bytes,
               headers: dict[str, str]) -> tuple[int, Any, str]:
        if method == "POST" and file_id is None:
            parts = _multipart(raw, headers.get("content-type", ""))
            content, purpose = parts.get("file"), parts.get("purpose", b"").decode()
            if content is None or purpose != "batch":
                return 400, _openai_error("purpose must be batch and a file given"), "application/json"
            with self._lock:
                new = self._new_id("file-")
                self.files[new] = (purpose, content)
            return 200, self._file_object(new), "application/json"
        if file_id not in self.files:
            return 404, _openai_error(f"No such File object: {file_id}"), "application/json"
        if action == "content":
            return 200, self.files[file_id][1], "application/octet-stream"
        return 200, self._file_object(file_id), "application/json"

    def _file_object(self, file_id: str) -> dict[str, Any]:
        purpose, content = self.files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": f"{file_id}.jsonl", "purpose": purpose, "status": "processed"}

    def _openai_batches(self, method: str, batch_id: str | None, action: str | None,
                        raw: bytes) -> tuple[int, Any, str]:
        if method == "POST" and batch_id is None:
            try:
                ask = json.loads(raw)
            except ValueError:
                return 400, _openai_error("invalid JSON"), "application/json"
            if ask.get("completion_window") != "24h":
                return 400, _openai_error("completion_window: only 24h is supported"), "application/json"
            file = self.files.get(ask.get("input_file_id", ""))
            if file is None:
                return 400, _openai_error("input_file_id: no such file"), "application/json"
            lines = [json.loads(line) for line in file[1].decode().splitlines() if line.strip()]
            models = {line.get("body", {}).get("model") for line in lines}
            ids = [line.get("custom_id") for line in lines]
            if len(models) != 1 or len(set(ids)) != len(ids) or any(
                    line.get("url") != ask.get("endpoint") for line in lines):
                return 400, _openai_error("the file must hold one model, unique custom ids and the batch's "
                                          "endpoint"), "application/json"
            batch = self._create("openai", [(line["custom_id"], line["body"]) for line in lines], file_id_of(ask))
            return 200, self._openai_batch(batch), "application/json"
        found = self.batches.get(batch_id or "")
        if found is None or found.api != "openai":
            return 404, _openai_error(f"No batch found with id '{batch_id}'"), "application/json"
        if action == "cancel" and method == "POST":
            found.cancelled = found.outcomes is None
        self._settle(found)
        return 200, self._openai_batch(found), "application/json"

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        done = batch.outcomes is not None
        ended = int(batch.ended_at or 0)
        failed = sum(1 for kind, _ in (batch.outcomes or {}).values() if kind != "succeeded")
        status = ("cancelled" if batch.cancelled else "expired" if batch.fate == "expire" else "completed") if done \
            else ("cancelling" if batch.cancelled else "in_progress")
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": int(batch.created), "in_progress_at": int(batch.created),
            "expires_at": int(batch.created + 86400),
            "completed_at": ended if done and status == "completed" else None,
            "expired_at": ended if done and status == "expired" else None,
            "cancelled_at": ended if done and status == "cancelled" else None,
            "request_counts": {"total": len(batch.lines), "completed": len(batch.lines) - failed if done else 0,
                               "failed": failed},
            "metadata": None,
        }


def file_id_of(ask: dict[str, Any]) -> str | None:
    value = ask.get("input_file_id")
    return value if isinstance(value, str) else None


def _anthropic_result(kind: str, payload: Any) -> dict[str, Any]:
    if kind == "succeeded":
        return {"type": "succeeded", "message": payload}
    if kind == "errored":
        _status, error_type, message = payload
        return {"type": "errored", "error": {"type": "error", "error": {"type": error_type, "message": message}}}
    return {"type": kind}


def _openai_result_line(request_id: str, cid: str, kind: str, payload: Any) -> dict[str, Any]:
    if kind == "succeeded":
        return {"id": request_id, "custom_id": cid, "response": {"status_code": 200, "request_id": request_id,
                                                                 "body": payload}, "error": None}
    if kind == "errored":
        status, error_type, message = payload
        return {"id": request_id, "custom_id": cid, "response": {
            "status_code": status, "request_id": request_id,
            "body": {"error": {"message": message, "type": error_type, "code": None}}}, "error": None}
    code = "batch_expired" if kind == "expired" else "batch_cancelled"
    return {"id": request_id, "custom_id": cid, "response": None,
            "error": {"code": code, "message": f"This request was not executed: {code}."}}


def _openai_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def _iso(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _multipart(raw: bytes, content_type: str) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    out: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name:
            out[str(name)] = payload if isinstance(payload, bytes) else b""
    return out
