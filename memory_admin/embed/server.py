"""Serve an embedder through the OpenAI embeddings API shape, on the standard library.

    python -m memory_admin.embed.server [--host 127.0.0.1] [--port 8765] [--embedder default]

``POST /v1/embeddings`` with ``{"model": ..., "input": str | [str]}`` answers
``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}],
"model": ..., "usage": {...}}``. Inputs are embedded as documents (the API has no
query side; a client adds any prefix itself). ``GET /v1/models`` lists the one model.
It lets several processes share one loaded model, and it is what the tests run the
OpenAI-compatible client against.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memory_admin.embed.protocol import Embedder


def make_server(
    embedder: Embedder, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None
) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (0: any free port) that is not yet serving.

    With ``api_key``, requests must carry ``Authorization: Bearer <api_key>`` (else 401).
    """
    lock = threading.Lock()  # one model, one caller at a time: onnxruntime already uses the cores

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: a test or a daemon
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def _authorised(self) -> bool:
            if api_key is None or self.headers.get("Authorization") == f"Bearer {api_key}":
                return True
            self._send(401, {"error": {"message": "invalid API key", "type": "invalid_request_error"}})
            return False

        def do_GET(self) -> None:
            if not self._authorised():
                return
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": embedder.model_id, "object": "model"}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if not self._authorised():
                return
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._error(404, f"no route {self.path}")
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = request["input"]
                texts = [texts] if isinstance(texts, str) else texts
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    raise TypeError("input must be a string or a list of strings")
            except (ValueError, KeyError, TypeError) as exc:
                self._error(400, f"bad request: {exc}")
                return
            with lock:
                matrix = embedder.embed_documents(texts)
            data = [{"object": "embedding", "index": i, "embedding": row.tolist()} for i, row in enumerate(matrix)]
            tokens = sum(len(t.split()) for t in texts)
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": request.get("model") or embedder.model_id,
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: Sequence[str] | None = None) -> int:
    from memory_admin.embed import open_embedder

    parser = argparse.ArgumentParser(prog="python -m memory_admin.embed.server", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--api-key", default=None, help="require this bearer token")
    parser.add_argument(
        "--embedder", default=None, help="an open_embedder() spec (default: MEMORY_EMBEDDER or default)"
    )
    options = parser.parse_args(argv)
    embedder = open_embedder(options.embedder)
    embedder.load()
    server = make_server(embedder, options.host, options.port, api_key=options.api_key)
    print(f"serving {embedder.model_id} on http://{options.host}:{server.server_address[1]}/v1/embeddings", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["main", "make_server"]
