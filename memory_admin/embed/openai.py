"""An OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings``.

Works with OpenAI itself and with every server that copies its shape (vLLM, Ollama,
LM Studio, text-embeddings-inference, LiteLLM, and :mod:`memory_admin.embed.server`).
The request is ``{"model", "input": [texts], "encoding_format": "float"}`` plus
``"dimensions"`` when asked for; the answer's ``data[i].embedding`` rows are put back
in ``index`` order. The API has no query/document distinction, so e5-style prefixes
are added here, before the texts are sent.

The client is the standard library's ``urllib``: one blocking POST per batch is all it
needs, and a dependency (httpx) would buy connection pooling that batching already
amortises. The async twins run it in a worker thread, as :class:`BaseEmbedder` does.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from memory_admin.embed.protocol import BaseEmbedder, EmbedderError, Matrix, Side, numpy


class OpenAIEmbedder(BaseEmbedder):
    """Embeddings from an OpenAI-compatible endpoint.

    ``base_url`` includes the version path (``https://api.openai.com/v1``); ``api_key``
    defaults to ``MEMORY_EMBEDDER_API_KEY`` then ``OPENAI_API_KEY`` (none is sent if
    neither is set, as local servers expect). ``dimensions`` is sent only when given;
    otherwise the first call learns it. ``model_id`` defaults to ``openai:<model>``:
    the same model behind two URLs is the same vector space.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        batch_size: int = 64,
        timeout: float = 30.0,
        model_id: str | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("MEMORY_EMBEDDER_BASE_URL") or "https://api.openai.com/v1").rstrip(
            "/"
        )
        self.api_key = api_key or os.environ.get("MEMORY_EMBEDDER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.requested_dimensions = dimensions
        self._dimensions = dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self.timeout = timeout
        self._model_id = model_id or f"openai:{model}" + (f":{dimensions}" if dimensions else "")

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = int(self._embed_batch(["dimensions"], "query").shape[1])
        return self._dimensions

    def _embed_batch(self, texts: list[str], side: Side) -> Matrix:
        np = numpy()
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/embeddings", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise EmbedderError(
                f"{self.base_url}/embeddings answered {exc.code}: {detail}", status=exc.code, url=self.base_url
            ) from exc
        except (urllib.error.URLError, TimeoutError, ValueError) as exc:
            raise EmbedderError(f"{self.base_url}/embeddings could not be reached: {exc}", url=self.base_url) from exc
        try:
            rows = sorted(answer["data"], key=lambda item: item["index"])
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(
                f"{self.base_url}/embeddings gave an answer of the wrong shape", url=self.base_url
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise EmbedderError(f"{self.base_url}/embeddings gave {matrix.shape[0]} vectors for {len(texts)} texts")
        if self._dimensions is None:
            self._dimensions = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimensions:
            raise EmbedderError(f"{self.base_url}/embeddings gave {matrix.shape[1]} dimensions, not {self._dimensions}")
        result: Matrix = matrix
        return result


__all__ = ["OpenAIEmbedder"]
