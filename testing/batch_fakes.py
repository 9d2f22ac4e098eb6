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

- Gemini (Batch Mode through the Files API, as the google-genai SDK drives it): the resumable
  upload (``POST /upload/v1beta/files`` with ``X-Goog-Upload-Protocol: resumable`` and
  ``X-Goog-Upload-Command: start`` answers the upload URL in ``X-Goog-Upload-URL``; ``upload,
  finalize`` to that URL stores the file, ``X-Goog-Upload-Status: final`` and ``{"file": File}``),
  ``GET /v1beta/files/{id}``, the download (``GET [/download]/v1beta/files/{id}:download?alt=media``),
  ``POST /v1beta/models/{model}:batchGenerateContent`` (``batch.inputConfig.fileName``: a JSONL file
  of ``{"key", "request"}`` lines; or inline ``inputConfig.requests.requests`` of ``{"request",
  "metadata": {"key"}}``), ``GET /v1beta/batches/{id}`` and the create's answer (an Operation whose
  ``metadata`` is the batch: ``state`` ``BATCH_STATE_PENDING``, ``_RUNNING``, ``_SUCCEEDED``,
  ``_CANCELLED``, ``_EXPIRED``; ``batchStats``; ``output.responsesFile`` or
  ``output.inlinedResponses``), ``POST /v1beta/batches/{id}:cancel`` (an empty answer),
  ``DELETE /v1beta/batches/{id}``. The results file: one ``{"key", "response":
  GenerateContentResponse}`` or ``{"key", "error": {"code", "message"}}`` (a ``google.rpc.Status``,
  its code gRPC's) a request; a request the Gemini persona refuses comes back as its line's error,
  never as a failure of the batch. An expired or cancelled batch has no results (Google's batch
  guide: an expired job "will not have any results to retrieve"; recalled, not checked here).

Each request of a batch is answered by the server's script (mode, persona) when the batch ends.
``batch_latency``: seconds a batch stays in progress; ``batch_fates``: one per batch created, in
order (the last repeats): ``ok``, ``expire`` (the window closes with every other request
unprocessed; a Gemini batch expires whole), ``error`` (the first request errored, as an
overloaded provider answers). Every line submitted is kept in ``submitted`` (api, batch id,
custom id or key): a test counts them.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import hashlib
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from testing.personas import GOOGLE_STATUS, gemini_model, google_error

if TYPE_CHECKING:
    from testing.scripted_server import ScriptedServer

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCH_FATES = ("ok", "expire", "error")


class Reply(NamedTuple):
    """An answer with headers of its own (Gemini's resumable upload says where and how it stands in them)."""

    status: int
    payload: Any
    content_type: str
    headers: dict[str, str] | None = None


# a Gemini endpoint: files (upload, get, download) or batches, under v1beta or v1alpha
GEMINI_PATH = re.compile(r"^/(?:(upload|download)/)?v1(?:beta|alpha)/(?:files|batches)(?:/|$|:)"
                         r"|/models/[^/:]+:batchGenerateContent$")


@dataclass
class FakeBatch:
    id: str
    api: str  # anthropic | openai | gemini
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
    model: str | None = None  # Gemini: the model the batch runs
    display_name: str | None = None
    inline: bool = False  # Gemini: the requests came inline, their answers go back inline


@dataclass
class GeminiUpload:
    """A resumable upload under way: what its start announced, and the bytes so far."""

    display_name: str | None
    mime_type: str
    size: int
    data: bytearray = field(default_factory=bytearray)


@dataclass
class BatchFakes:
    server: ScriptedServer
    latency: float = 0.0
    fates: list[str] = field(default_factory=lambda: ["ok"])
    batches: dict[str, FakeBatch] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # id -> (purpose, content)
    gemini_files: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)  # files/<id> -> (File, content)
    uploads: dict[str, GeminiUpload] = field(default_factory=dict)  # upload id -> upload under way
    submitted: list[tuple[str, str, str]] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}scripted"

    def _create(self, api: str, lines: list[tuple[str, dict[str, Any]]], input_file_id: str | None = None,
                **extra: Any) -> FakeBatch:
        with self._lock:
            fate = self.fates[min(len(self.batches), len(self.fates) - 1)]
            now = time.time()
            prefix = {"anthropic": "msgbatch_", "gemini": "batches/"}.get(api, "batch_")
            batch = FakeBatch(self._new_id(prefix), api, lines, fate, now, now + self.latency,
                              input_file_id=input_file_id, **extra)
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
        if batch.api == "gemini":
            self._settle_gemini(batch)
            return
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

    def _settle_gemini(self, batch: FakeBatch) -> None:
        """Answer a Gemini batch's requests with the Gemini persona; an expired or cancelled batch
        answers none."""
        outcomes: dict[str, tuple[str, Any]] = {}
        if not batch.cancelled and batch.fate != "expire":
            for i, (key, request) in enumerate(batch.lines):
                if batch.fate == "error" and i == 0:
                    outcomes[key] = ("errored", google_error(503, "The model is overloaded. Please try again later.")[1])
                    continue
                status, payload = self.server.answer_gemini_now(batch.model or "", request)
                outcomes[key] = ("succeeded", payload) if status == 200 else ("errored", payload)
        with self._lock:
            batch.outcomes = outcomes
            batch.ended_at = time.time()
            if outcomes and not batch.inline:
                lines = [json.dumps({"key": key, **_gemini_result(kind, payload)})
                         for key, (kind, payload) in outcomes.items()]
                name = f"files/batch-{batch.id.removeprefix('batches/')}"
                self._store_gemini_file(name, ("\n".join(lines) + "\n").encode(), "application/jsonl",
                                        batch.display_name, generated=True)
                batch.output_file_id = name

    def _store_gemini_file(self, name: str, content: bytes, mime_type: str, display_name: str | None,
                           generated: bool = False) -> dict[str, Any]:
        now = time.time()
        file: dict[str, Any] = {
            "name": name, "mimeType": mime_type, "sizeBytes": str(len(content)), "createTime": _iso(now),
            "updateTime": _iso(now), "expirationTime": _iso(now + 48 * 3600),
            "sha256Hash": base64.b64encode(hashlib.sha256(content).hexdigest().encode()).decode(),
            "uri": f"{self.server.root_url}/v1beta/{name}", "state": "ACTIVE",
            "source": "GENERATED" if generated else "UPLOADED"}
        if display_name:
            file["displayName"] = display_name
        if generated:
            file["downloadUri"] = f"{self.server.root_url}/download/v1beta/{name}:download?alt=media"
        self.gemini_files[name] = (file, content)
        return file

    def _store_file(self, purpose: str, text: str) -> str:
        file_id = self._new_id("file-")
        self.files[file_id] = (purpose, text.encode())
        return file_id

    # ---- HTTP ---------------------------------------------------------------------------------
    @staticmethod
    def handles(path: str) -> bool:
        """Whether ``path`` is a batch or file endpoint."""
        bare = path.split("?", 1)[0]
        return (re.search(r"/v1/(messages/batches|batches|files)(/|$)", bare) is not None
                or GEMINI_PATH.search(bare.rstrip("/")) is not None)

    def handle(self, method: str, path: str, raw: bytes,
               headers: dict[str, str]) -> tuple[int, Any, str] | Reply | None:
        """(status, payload, content type[, headers]) for a batch or file endpoint; None for any other path."""
        if GEMINI_PATH.search(path.split("?", 1)[0].rstrip("/")):
            return self._gemini(method, path, raw, headers)
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


    # ---- Gemini ---------------------------------------------------------------------------------
    def _gemini(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> Reply:
        bare, _, query = path.partition("?")
        bare = bare.rstrip("/")
        params = {k: v for k, _, v in (p.partition("=") for p in query.split("&") if p)}
        json_type = "application/json"
        if re.match(r"^/upload/v1(beta|alpha)/files$", bare) and method == "POST":
            return self._gemini_upload(params.get("upload_id"), raw, headers)
        m = re.search(r"/files/([^/:]+)(:download)?$", bare)
        if m and method == "GET":
            found = self.gemini_files.get(f"files/{m.group(1)}")
            if found is None:
                return Reply(*google_error(404, f"File files/{m.group(1)} not found."), json_type)
            if m.group(2):
                return Reply(200, found[1], "application/octet-stream")
            return Reply(200, found[0], json_type)
        m = re.search(r"/models/([^/:]+):batchGenerateContent$", bare)
        if m and method == "POST":
            return self._gemini_create(m.group(1), raw)
        m = re.search(r"/batches/([^/:]+)(:cancel)?$", bare)
        if m:
            batch = self.batches.get(f"batches/{m.group(1)}")
            if batch is None or batch.api != "gemini":
                return Reply(*google_error(404, f"Batch batches/{m.group(1)} not found."), json_type)
            if m.group(2) and method == "POST":
                batch.cancelled = batch.outcomes is None
                return Reply(200, {}, json_type)
            if method == "DELETE":
                with self._lock:
                    self.batches.pop(batch.id, None)
                return Reply(200, {}, json_type)
            self._settle(batch)
            return Reply(200, self._gemini_operation(batch), json_type)
        return Reply(*google_error(404, "Method not found."), json_type)

    def _gemini_upload(self, upload_id: str | None, raw: bytes, headers: dict[str, str]) -> Reply:
        """The resumable upload's two steps: ``start`` (the file's metadata; the upload URL comes
        back in ``X-Goog-Upload-URL``), then ``upload`` chunks at their offsets, the last one
        ``upload, finalize``."""
        command = headers.get("x-goog-upload-command", "")
        if upload_id is None:
            if headers.get("x-goog-upload-protocol") != "resumable" or command != "start":
                return Reply(*google_error(400, "Only the resumable upload protocol is supported here."),
                             "application/json")
            try:
                meta = json.loads(raw or b"{}").get("file") or {}
                size = int(headers.get("x-goog-upload-header-content-length", ""))
            except (ValueError, AttributeError):
                return Reply(*google_error(400, "Invalid upload start request."), "application/json")
            mime = headers.get("x-goog-upload-header-content-type") or meta.get("mimeType") or "application/octet-stream"
            with self._lock:
                new = self._new_id("upload")
                self.uploads[new] = GeminiUpload(meta.get("displayName"), mime, size)
            url = f"{self.server.root_url}/upload/v1beta/files?upload_id={new}&upload_protocol=resumable"
            return Reply(200, b"", "text/plain", {"X-Goog-Upload-URL": url, "X-Goog-Upload-Status": "active"})
        upload = self.uploads.get(upload_id)
        if upload is None:
            return Reply(404, b"", "text/plain", {"X-Goog-Upload-Status": "final"})
        if int(headers.get("x-goog-upload-offset", "-1")) != len(upload.data):
            return Reply(*google_error(400, "Invalid upload offset."), "application/json",
                         {"X-Goog-Upload-Status": "active"})
        upload.data += raw
        if "finalize" not in command:
            return Reply(200, b"", "text/plain", {"X-Goog-Upload-Status": "active"})
        with self._lock:
            del self.uploads[upload_id]
            name = f"files/{self._new_id('file')}"
            file = self._store_gemini_file(name, bytes(upload.data), upload.mime_type, upload.display_name)
        return Reply(200, {"file": file}, "application/json", {"X-Goog-Upload-Status": "final"})

    def _gemini_create(self, model: str, raw: bytes) -> Reply:
        json_type = "application/json"
        if gemini_model(model) is None:
            return Reply(*google_error(404, f"models/{model} is not found for API version v1beta, or is not "
                                            "supported for batchGenerateContent."), json_type)
        try:
            batch = json.loads(raw)["batch"]
            config = batch.get("inputConfig") or batch.get("input_config") or {}
        except (KeyError, TypeError, ValueError, AttributeError):
            return Reply(*google_error(400, "* BatchGenerateContentRequest.batch: batch is not specified\n"), json_type)
        file_name = config.get("fileName") or config.get("file_name")
        inline = config.get("requests")
        lines: list[tuple[str, dict[str, Any]]] = []
        try:
            if file_name:
                found = self.gemini_files.get(file_name)
                if found is None:
                    return Reply(*google_error(404, f"File {file_name} not found."), json_type)
                for n, text in enumerate(found[1].decode().splitlines()):
                    if text.strip():
                        line = json.loads(text)
                        lines.append((str(line.get("key", n)), dict(line["request"])))
            elif isinstance(inline, dict):
                for n, r in enumerate(inline.get("requests") or []):
                    lines.append((str((r.get("metadata") or {}).get("key", n)), dict(r["request"])))
            else:
                return Reply(*google_error(400, "* BatchGenerateContentRequest.batch.input_config: input_config "
                                                "is not specified\n"), json_type)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            return Reply(*google_error(400, f"Invalid batch input: {err!r}"), json_type)
        made = self._create("gemini", lines, file_name, model=model, display_name=batch.get("displayName"),
                            inline=not file_name)
        return Reply(200, self._gemini_operation(made, created=True), json_type)

    def _gemini_operation(self, batch: FakeBatch, created: bool = False) -> dict[str, Any]:
        """The batch as the Gemini API shows it: an Operation whose ``metadata`` is the batch
        (pending as created, running from then until it ends)."""
        done = batch.outcomes is not None
        if not done:
            state = "BATCH_STATE_PENDING" if created else "BATCH_STATE_RUNNING"
        elif batch.cancelled:
            state = "BATCH_STATE_CANCELLED"
        elif batch.fate == "expire":
            state = "BATCH_STATE_EXPIRED"
        else:
            state = "BATCH_STATE_SUCCEEDED"
        outcomes = batch.outcomes or {}
        failed = sum(1 for kind, _ in outcomes.values() if kind != "succeeded")
        stats = {"requestCount": str(len(batch.lines)), "successfulRequestCount": str(len(outcomes) - failed),
                 "failedRequestCount": str(failed), "pendingRequestCount": str(0 if done else len(batch.lines))}
        source = ({"fileName": batch.input_file_id} if batch.input_file_id
                  else {"requests": {"requests": [{"metadata": {"key": k}} for k, _ in batch.lines]}})
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": batch.id, "model": f"models/{batch.model}", "displayName": batch.display_name or "",
            "inputConfig": source, "createTime": _iso(batch.created),
            "updateTime": _iso(batch.ended_at or batch.created), "batchStats": stats, "state": state}
        output: dict[str, Any] | None = None
        if batch.output_file_id:
            output = {"responsesFile": batch.output_file_id}
        elif batch.inline and outcomes:
            output = {"inlinedResponses": {"inlinedResponses": [
                {"metadata": {"key": key}, **_gemini_result(kind, payload)} for key, (kind, payload) in outcomes.items()]}}
        if done:
            meta["endTime"] = _iso(batch.ended_at)
        if output is not None:
            meta["output"] = output
        operation: dict[str, Any] = {"name": batch.id, "metadata": meta, "done": done}
        if done and output is not None:
            operation["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput", **output}
        return operation


def _gemini_result(kind: str, payload: Any) -> dict[str, Any]:
    """One request's result in a Gemini batch: its response, or its error as a ``google.rpc.Status``."""
    if kind == "succeeded":
        return {"response": payload}
    error = (payload or {}).get("error") or {}
    code = GOOGLE_STATUS.get(int(error.get("code", 500)), ("INTERNAL", 13))[1]
    return {"error": {"code": code, "message": error.get("message", "")}}


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
