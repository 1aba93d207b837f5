"""The OpenAI-compatible client against a real local server that serves the default model."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.optional import needs_extra

pytest.importorskip("numpy", reason=needs_extra("semantic"))

import numpy as np

from memory_admin.embed import EmbedderError, OnnxEmbedder, OpenAIEmbedder, open_embedder
from memory_admin.embed.server import make_server

KEY = "sk-test-local"


@pytest.fixture(scope="module")
def base_url(embedder: OnnxEmbedder) -> Iterator[str]:
    server = make_server(embedder, "127.0.0.1", 0, api_key=KEY)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_endpoint_gives_the_local_vectors(embedder: OnnxEmbedder, base_url: str) -> None:
    client = OpenAIEmbedder("all-MiniLM-L6-v2", base_url=base_url, api_key=KEY, batch_size=2)
    texts = ["Dana is a staff engineer", "on the payments team", "she likes tea", "and hiking", "in Oregon"]
    remote = client.embed_documents(texts)  # three requests of at most two texts
    np.testing.assert_allclose(remote, embedder.embed_documents(texts), atol=1e-6)
    np.testing.assert_allclose(
        client.embed_query("Where does Dana work?"), embedder.embed_query("Where does Dana work?"), atol=1e-6
    )
    assert client.dimensions == 384
    assert client.model_id == "openai:all-MiniLM-L6-v2"


def test_the_dimensions_are_learnt_from_the_first_answer(base_url: str) -> None:
    assert OpenAIEmbedder("m", base_url=base_url, api_key=KEY).dimensions == 384


def test_client_prefixes_reach_the_server(embedder: OnnxEmbedder, base_url: str) -> None:
    client = OpenAIEmbedder("e5", base_url=base_url, api_key=KEY, query_prefix="query: ", document_prefix="passage: ")
    np.testing.assert_allclose(client.embed_query("tea"), embedder.embed_documents(["query: tea"])[0], atol=1e-6)
    np.testing.assert_allclose(client.embed_documents(["tea"])[0], embedder.embed_documents(["passage: tea"])[0])


def test_async_twins(embedder: OnnxEmbedder, base_url: str) -> None:
    client = OpenAIEmbedder("m", base_url=base_url, api_key=KEY)
    vector = asyncio.run(client.aembed_query("tea"))
    np.testing.assert_allclose(vector, embedder.embed_query("tea"), atol=1e-6)


def test_a_wrong_key_is_a_typed_error_with_the_status(base_url: str) -> None:
    with pytest.raises(EmbedderError, match="401") as caught:
        OpenAIEmbedder("m", base_url=base_url, api_key="wrong").embed_query("tea")
    assert caught.value.extras["status"] == 401


def test_an_unreachable_endpoint_is_a_typed_error() -> None:
    # port 9 (discard) on loopback: nothing listens there
    client = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", api_key=KEY, timeout=2)
    with pytest.raises(EmbedderError, match="could not be reached"):
        client.embed_query("tea")


def test_the_server_speaks_the_api_shape(base_url: str) -> None:
    request = urllib.request.Request(
        f"{base_url}/embeddings",
        data=json.dumps({"model": "m", "input": "one text"}).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["object"] == "list"
    assert answer["model"] == "m"
    assert [(d["object"], d["index"], len(d["embedding"])) for d in answer["data"]] == [("embedding", 0, 384)]
    bad = urllib.request.Request(f"{base_url}/embeddings", data=b"{}", headers={"Authorization": f"Bearer {KEY}"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(bad, timeout=10)
    assert caught.value.code == 400


def test_open_embedder_names_the_url_inline(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_EMBEDDER_API_KEY", KEY)
    client = open_embedder(f"openai:all-MiniLM-L6-v2@{base_url}")
    assert isinstance(client, OpenAIEmbedder)
    assert client.base_url == base_url
    assert client.embed_query("tea").shape == (384,)
