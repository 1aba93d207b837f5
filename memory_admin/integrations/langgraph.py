"""memory_admin as a LangGraph store: :class:`MemoryAdminStore`, a ``BaseStore``.

LangGraph (and LangMem on top of it) keep long-term memory in a ``BaseStore``: items
``(namespace, key) → value`` with ``put``, ``get``, ``search`` and ``list_namespaces``.
This adapter keeps them as memory records, so every LangGraph item gets a history, the
dashboard, grants and erasure:

* **the tenant never comes from the namespace**: it is the constructor's ``tenant`` or,
  inside a run, ``config["configurable"][tenant_key]``. The namespace maps onto the
  rest of the flat scope by a template: ``("memories", "{user}")`` puts
  ``("memories", "u1", …)`` at ``{tenant: T, user: u1}``. A namespace no template
  matches is tenant-wide. The first matching template wins.
* an item is one record: kind ``fact``, the key slot ``lg.<digests>`` (a digest of each
  namespace label, then one of the key: a namespace prefix is a key prefix, so the
  store filters by namespace inside its query), tag ``langgraph``, provenance source
  ``langgraph`` (with the run's thread and run ids), and as content the JSON text
  ``{"namespace": [...], "key": ..., "value": {...}}`` — what the dashboard shows.
* ``put`` of a live key **supersedes** it (the chain keeps every version);
  ``put(value=None)`` and ``delete`` **invalidate** the head (only a host's delete
  forgets). ``get`` answers the live head, ``created_at`` from the chain's first version
  and ``updated_at`` from the head.
* ``search`` with a query is the store's search (hybrid when it has an embedder, the
  score the fused score; BM25 otherwise). Value filters (``$eq $ne $gt $gte $lt $lte``,
  nested objects, lists) are applied here, over the store's pages in order: the adapter
  keeps reading pages until the requested page is full or the namespace is exhausted, so
  a page is never short; a filter costs a read of the namespace's candidates up to the
  page.
* ``index`` (``dims``, ``embed``, ``fields``): the store embeds with ``embed`` (LangChain
  ``Embeddings``, an embedding function, a memory_admin :class:`~memory_admin.embed.Embedder`
  or embedder spec such as ``"default"``), one vector per item: the mean of its fields'
  vectors. An item without indexed text (``index=False``, or none of the fields present)
  ranks after every indexed one, without a score, as in LangGraph's in-memory store.
* TTL is refused (``supports_ttl = False``): LangGraph's TTL refreshes on every read,
  which would write a new version of an item each time it is read.

Needs the ``langgraph`` extra: ``pip install 'memory-admin[langgraph]'``.

Why one module: it is the whole adapter behind one extra — the namespace templates, the
item codec and every ``BaseStore`` operation written once as steps for both drivers —
and nothing else imports its parts; split, the op set would be spread over files that
only ever change together.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from memory_admin.embed.protocol import Embedder, Matrix, Vector, numpy
from memory_admin.errors import MemoryLimitError, MemoryScopeError, MemoryStoreError, MemoryValidationError
from memory_admin.integrations import require_extra
from memory_admin.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
    holds_lone_surrogate,
    parse_model,
)
from memory_admin.scope import TENANT_KEY, Scope, canonical_scope, scope_problems
from memory_admin.steps import arun_steps, run_steps
from memory_admin.store.protocol import AdminMemoryStore, MemoryStore, RecordListQuery, RecordPage

require_extra("langgraph.store.base", "langgraph", "memory_admin.integrations.langgraph")

from langgraph.store.base import (  # noqa: E402  (after the check that names the extra)
    BaseStore,
    Embeddings,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

if TYPE_CHECKING:
    from memory_admin.store.protocol import ChainLink

SOURCE = "langgraph"
TAG = "langgraph"
UNINDEXED_TAG = "langgraph-unindexed"
KEY_PREFIX = "lg."
LABEL_DIGEST = 8
KEY_DIGEST = 16
MAX_NAMESPACE_DEPTH = 13
"""Labels a namespace may have: the key slot holds a digest of each in 128 characters."""
DEFAULT_NAMESPACES: tuple[tuple[str, ...], ...] = (("memories", "{user}"),)
"""LangMem's convention, ``("memories", "{langgraph_user_id}")``: the second label is the user."""
DEFAULT_TENANT_KEY = "tenant_id"
DELETE_REASON = "deleted through LangGraph"
PAGE = 200
"""Records read per page while a filter or a deep page needs more."""
GET_CHUNK = 500
ASYNC_CONCURRENCY = 8
"""Batches one adapter runs at once per event loop: fewer than a pool's connections."""
FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_UNSAFE_JSON = re.compile("[\x7f-\x9f]")


# --- namespaces ----------------------------------------------------------------------


@dataclass(frozen=True)
class NamespaceTemplate:
    """A namespace shape and the scope pairs its labels give: ``("memories", "{user}")``
    puts ``("memories", "u1", …)`` at ``user=u1``. ``*`` matches any label."""

    labels: tuple[str, ...]

    @classmethod
    def parse(cls, template: Sequence[str] | NamespaceTemplate) -> NamespaceTemplate:
        if isinstance(template, NamespaceTemplate):
            return template
        if isinstance(template, str) or not template:
            raise MemoryValidationError(
                f"A namespace template is a non-empty tuple of labels, not {template!r}.",
                [{"loc": "namespaces", "msg": "a tuple of labels such as ('memories', '{user}')"}],
            )
        labels = tuple(template)
        seen: set[str] = set()
        for label in labels:
            if not isinstance(label, str) or not label:
                raise MemoryValidationError(
                    f"Namespace template {labels!r} has a label that is not a non-empty string.",
                    [{"loc": "namespaces", "msg": "labels are non-empty strings"}],
                )
            if "{" in label or "}" in label:
                found = _PLACEHOLDER.fullmatch(label)
                if found is None:
                    raise MemoryValidationError(
                        f"Template label {label!r} must be a whole placeholder such as '{{user}}' "
                        "(a scope key: lowercase letters, digits and _).",
                        [{"loc": "namespaces", "msg": f"bad placeholder {label!r}"}],
                    )
                name = found.group(1)
                if name == TENANT_KEY:
                    raise MemoryValidationError(
                        "A namespace never names the tenant: pass tenant= (or the run's config) instead.",
                        [{"loc": "namespaces", "msg": "{tenant} is not allowed"}],
                    )
                if name in seen:
                    raise MemoryValidationError(
                        f"Placeholder {label!r} appears twice in {labels!r}.",
                        [{"loc": "namespaces", "msg": "duplicate placeholder"}],
                    )
                seen.add(name)
        return cls(labels)

    def pairs(self, namespace: tuple[str, ...]) -> dict[str, str] | None:
        """The scope pairs ``namespace`` gives, or ``None`` when it does not match."""
        if len(namespace) < len(self.labels):
            return None
        pairs: dict[str, str] = {}
        for label, value in zip(self.labels, namespace, strict=False):
            found = _PLACEHOLDER.fullmatch(label)
            if found is not None:
                pairs[found.group(1)] = value
            elif label != "*" and label != value:
                return None
        return pairs


def _digest(text: str, size: int) -> str:
    raw = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    return base64.b32encode(raw).decode("ascii").lower()[:size]


def namespace_slot(namespace: Sequence[str]) -> str:
    """The key-slot prefix every item of ``namespace`` (and of namespaces below it) has."""
    return KEY_PREFIX + "".join(_digest(label, LABEL_DIGEST) for label in namespace)


def item_slot(namespace: Sequence[str], key: str) -> str:
    """The record key slot of item ``(namespace, key)``."""
    return namespace_slot(namespace) + "." + _digest(key, KEY_DIGEST)


def _check_labels(namespace: object, *, what: str = "namespace") -> tuple[str, ...]:
    if not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(f"A {what} is a tuple of strings, not {type(namespace).__name__}.")
    labels = tuple(namespace)
    for label in labels:
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"Namespace labels are strings; got {type(label).__name__} in {labels!r}.")
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings: {labels!r}.")
        if "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"Namespace labels cannot contain periods or NUL bytes: {label!r}.")
    if holds_lone_surrogate(labels):
        raise InvalidNamespaceError("A namespace label holds a lone surrogate (not valid Unicode); send UTF-8 text.")
    if len(labels) > MAX_NAMESPACE_DEPTH:
        raise InvalidNamespaceError(
            f"Namespaces have at most {MAX_NAMESPACE_DEPTH} labels here; {labels[:3]!r}… has {len(labels)}."
        )
    return labels


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise MemoryValidationError(
            f"An item key is a string, not {type(key).__name__}.", [{"loc": "key", "msg": "a string"}]
        )
    if holds_lone_surrogate(key):
        raise MemoryValidationError(
            "The key holds a lone surrogate (not valid Unicode); send UTF-8 text.", [{"loc": "key", "msg": "not text"}]
        )
    return key


# --- values as record content --------------------------------------------------------


def encode_item(
    namespace: Sequence[str], key: str, value: Mapping[str, Any], index: Literal[False] | list[str] | None = None
) -> str:
    """An item as record content: ``{"namespace": [...], "key": ..., "value": {...}}``
    (plus ``"index"`` when the item chose its own fields), JSON a person can read."""
    if not isinstance(value, Mapping):
        raise MemoryValidationError(
            f"A LangGraph value is a JSON object (a dict), not {type(value).__name__}.",
            [{"loc": "value", "msg": "a dict"}],
        )
    body: dict[str, Any] = {"namespace": list(namespace), "key": key, "value": value}
    if index is not None:
        body["index"] = index
    try:
        text = json.dumps(body, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MemoryValidationError(
            f"A LangGraph value must be JSON (objects, lists, strings, finite numbers, booleans, null): {exc}",
            [{"loc": "value", "msg": "not JSON"}],
        ) from None
    # one scan of the text finds a lone surrogate anywhere in the item (JSON writes it raw)
    if holds_lone_surrogate(text):
        raise MemoryValidationError(
            "The item holds a lone surrogate (not valid Unicode); send UTF-8 text.",
            [{"loc": "value", "msg": "not text"}],
        )
    # JSON leaves DEL and the C1 controls raw; record content refuses them, an escape keeps them
    return _UNSAFE_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


@dataclass(frozen=True)
class StoredItem:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    index: Literal[False] | list[str] | None


def decode_item(content: str) -> StoredItem | None:
    """The item a record's content holds, or ``None`` for content the adapter did not write."""
    if not content.startswith("{"):
        return None
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    namespace, key, value = body.get("namespace"), body.get("key"), body.get("value")
    if not (isinstance(namespace, list) and all(isinstance(x, str) for x in namespace)):
        return None
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    index = body.get("index")
    if not (index is None or index is False or (isinstance(index, list) and all(isinstance(x, str) for x in index))):
        index = None
    return StoredItem(tuple(namespace), key, value, index)


# --- value filters -------------------------------------------------------------------


def check_filter(filter: object) -> dict[str, Any]:
    """A search filter, checked before anything is read: a mapping of field to a value
    or to ``{"$op": operand}`` with the six operators."""
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        raise MemoryValidationError(
            f"A filter is a mapping of field to value, not {type(filter).__name__}.",
            [{"loc": "filter", "msg": "a mapping"}],
        )

    def walk(node: Any, loc: str) -> None:
        if isinstance(node, Mapping):
            for name, value in node.items():
                if not isinstance(name, str):
                    raise MemoryValidationError(
                        f"Filter fields are strings; {name!r} at {loc} is not.", [{"loc": loc, "msg": "field names"}]
                    )
                if name.startswith("$") and name not in FILTER_OPERATORS:
                    raise MemoryValidationError(
                        f"Unknown filter operator {name!r}; use one of {', '.join(sorted(FILTER_OPERATORS))}.",
                        [{"loc": f"{loc}.{name}", "msg": "unknown operator"}],
                    )
                walk(value, f"{loc}.{name}")
        elif isinstance(node, list | tuple):
            for position, value in enumerate(node):
                walk(value, f"{loc}[{position}]")

    walk(filter, "filter")
    return dict(filter)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    left, right = _number(value), _number(operand)
    if left is None or right is None:
        return False  # an ordering of something that is not a number matches nothing
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def matches(value: Any, condition: Any) -> bool:
    """JSON matching as LangGraph's stores do it: operators, nested objects, whole lists."""
    if isinstance(condition, Mapping):
        if any(isinstance(name, str) and name.startswith("$") for name in condition):
            return all(_operator(value, op, operand) for op, operand in condition.items())
        if not isinstance(value, Mapping):
            return False
        return all(matches(value.get(name), sub) for name, sub in condition.items())
    if isinstance(condition, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(condition)
            and all(matches(v, c) for v, c in zip(value, condition, strict=True))
        )
    return bool(value == condition)


def _field(value: Mapping[str, Any], name: str) -> Any:
    """A filter field: a top-level key, else a dotted path into nested objects
    (``user.access-level``), as LangGraph's SQL stores read it."""
    if name in value or "." not in name:
        return value.get(name)
    node: Any = value
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """True when the item's value meets every condition of ``filter``."""
    return all(matches(_field(value, name), condition) for name, condition in filter.items())


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)


# --- the embedder: one vector per item, from its indexed fields ----------------------


class ItemEmbedder:
    """An :class:`~memory_admin.embed.Embedder` over LangGraph ``index`` settings.

    The store embeds a record's content; for an item written by the adapter that is its
    JSON, so this embeds the item's indexed fields instead (the item's own ``index`` or
    the config's ``fields``; ``$`` is the whole value), each field text separately, and
    answers their mean (unit length). Other records' content is embedded as it is.
    """

    def __init__(
        self,
        embed: Embeddings | Embedder | Callable[..., Any] | str,
        dims: int,
        fields: Sequence[str] | None = None,
        *,
        model_id: str | None = None,
    ) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise MemoryValidationError("index['dims'] is the embeddings' length, a positive integer.")
        self._fields = list(fields) if fields else ["$"]
        self._paths = [(field, tokenize_path(field) if field != "$" else field) for field in self._fields]
        self._dims = dims
        self._inner: Embedder | None = None
        self._lc: Embeddings | None = None
        if isinstance(embed, str) and ":" not in embed:
            from memory_admin.embed import open_embedder

            self._inner = open_embedder(embed)
        elif isinstance(embed, Embedder) and not isinstance(embed, Embeddings):
            self._inner = embed
        else:
            self._lc = ensure_embeddings(cast(Any, embed))
        if self._inner is not None:
            name = self._inner.model_id
        else:
            target = getattr(embed, "__qualname__", None) or type(self._lc).__qualname__
            name = f"langgraph:{getattr(embed, '__module__', type(embed).__module__)}.{target}"
        self._model_id = model_id or f"{name}/{dims}"
        self.embeddings: Embeddings | Embedder = self._lc if self._lc is not None else cast(Embedder, self._inner)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dims

    @property
    def fields(self) -> list[str]:
        return list(self._fields)

    def load(self) -> None:
        if self._inner is not None:
            self._inner.load()

    def texts_of(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> list[str]:
        """The texts an item's vector is made of (none: the item is not indexed)."""
        if index is False:
            return []
        paths = self._paths if index is None else [(f, tokenize_path(f) if f != "$" else f) for f in index]
        texts: list[str] = []
        for _, path in paths:
            texts.extend(get_text_at_path(value, path))
        return texts

    def _plan(self, texts: Sequence[str]) -> tuple[list[str], list[list[int]]]:
        flat: list[str] = []
        groups: list[list[int]] = []
        for text in texts:
            item = decode_item(text)
            parts = [text] if item is None else self.texts_of(item.value, item.index)
            # an item with nothing indexed still needs a vector; its content stands in (it ranks last anyway)
            parts = parts or [text]
            groups.append(list(range(len(flat), len(flat) + len(parts))))
            flat.extend(parts)
        return flat, groups

    def _pool(self, rows: Any, groups: list[list[int]]) -> Matrix:
        np = numpy()
        matrix = np.asarray(rows, dtype=np.float32).reshape(-1, self._dims) if len(rows) else np.zeros((0, self._dims))
        out = np.zeros((len(groups), self._dims), dtype=np.float32)
        for row, members in enumerate(groups):
            vectors = matrix[members]
            norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            out[row] = (vectors / norms).mean(axis=0)
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        pooled: Matrix = (out / norms).astype(np.float32)
        return pooled

    def _check(self, rows: Any, count: int) -> Any:
        if len(rows) != count or any(len(row) != self._dims for row in rows):
            raise MemoryStoreError(
                f"The embeddings answered {len(rows)} vectors for {count} texts, or vectors not of index['dims'] "
                f"= {self._dims} numbers."
            )
        return rows

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        flat, groups = self._plan(texts)
        if self._inner is not None:
            rows: Any = self._inner.embed_documents(flat)
        else:
            assert self._lc is not None
            rows = self._check(self._lc.embed_documents(flat), len(flat)) if flat else []
        return self._pool(rows, groups)

    async def aembed_documents(self, texts: Sequence[str]) -> Matrix:
        flat, groups = self._plan(texts)
        if self._inner is not None:
            rows: Any = await self._inner.aembed_documents(flat)
        else:
            assert self._lc is not None
            rows = self._check(await self._lc.aembed_documents(flat), len(flat)) if flat else []
        return self._pool(rows, groups)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        if self._inner is not None:
            return self._inner.embed_queries(texts)
        assert self._lc is not None
        lc = self._lc
        rows = self._check([lc.embed_query(text) for text in texts], len(texts))
        return self._pool(rows, [[i] for i in range(len(texts))])

    async def aembed_queries(self, texts: Sequence[str]) -> Matrix:
        if self._inner is not None:
            return await self._inner.aembed_queries(texts)
        assert self._lc is not None
        rows = self._check(list(await asyncio.gather(*(self._lc.aembed_query(t) for t in texts))), len(texts))
        return self._pool(rows, [[i] for i in range(len(texts))])

    def embed_query(self, text: str) -> Vector:
        row: Vector = self.embed_queries([text])[0]
        return row

    async def aembed_query(self, text: str) -> Vector:
        row: Vector = (await self.aembed_queries([text]))[0]
        return row


def _fields_of(index: Mapping[str, Any]) -> list[str] | None:
    # SqliteStore's index config calls them text_fields
    fields = index.get("fields", index.get("text_fields"))
    if fields is None:
        return None
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise MemoryValidationError("index['fields'] is a list of field paths such as ['text', 'meta.title'].")
    return list(fields)


def item_embedder(index: Mapping[str, Any]) -> ItemEmbedder:
    """The store's embedder for a LangGraph ``index`` config (``dims``, ``embed``, ``fields``)."""
    if "embed" not in index or "dims" not in index:
        raise MemoryValidationError(
            "An index config needs 'dims' and 'embed' (LangChain Embeddings, an embedding function, "
            "a memory_admin Embedder or an embedder spec such as 'default').",
            [{"loc": "index", "msg": "dims and embed are required"}],
        )
    return ItemEmbedder(index["embed"], index["dims"], _fields_of(index), model_id=index.get("model_id"))


# --- the store -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One store call the batch needs; the sync and async drivers answer it."""

    method: Literal["search", "list", "write", "invalidate", "chain"]
    args: tuple[Any, ...]


_Steps = Generator[_Call, Any, Any]
_Chains = dict[str, "list[ChainLink]"]


@dataclass(frozen=True)
class _Put:
    namespace: tuple[str, ...]
    key: str
    slot: str
    scope: Scope
    write: MemoryWriteInput | None  # None: a delete


class MemoryAdminStore(BaseStore):
    """A LangGraph ``BaseStore`` over any memory_admin store.

    ``store`` is a store object or a store URL (``sqlite:///…``, ``postgresql://…``,
    ``memory://``; the adapter then owns it and closes it in :meth:`close`). ``tenant``
    is every item's tenant; without it each batch reads ``tenant_key`` from the
    running graph's ``config["configurable"]`` and refuses to run without one.
    ``namespaces`` are the templates that map namespaces onto the scope
    (:class:`NamespaceTemplate`). ``index`` is LangGraph's index config; with a URL its
    ``embed`` becomes the store's embedder, with a store object the store must already
    embed with an :class:`ItemEmbedder`.
    """

    supports_ttl: bool = False

    def __init__(
        self,
        store: MemoryStore | str,
        *,
        tenant: str | None = None,
        namespaces: Iterable[Sequence[str] | NamespaceTemplate] = DEFAULT_NAMESPACES,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        tenant_key: str = DEFAULT_TENANT_KEY,
    ) -> None:
        if ttl:
            raise MemoryValidationError(
                "MemoryAdminStore does not do TTL: LangGraph refreshes a TTL on every read, which would write a "
                "new version of the item each time. Expire records from host code (expires_at) instead.",
                [{"loc": "ttl", "msg": "not supported"}],
            )
        self._templates = tuple(NamespaceTemplate.parse(t) for t in namespaces)
        self._tenant = canonical_scope({TENANT_KEY: tenant})[TENANT_KEY] if tenant is not None else None
        self._tenant_key = tenant_key
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        embedder = item_embedder(index) if index and "embed" in index else None
        self._owns = isinstance(store, str)
        if isinstance(store, str):
            from memory_admin.store import open_store

            self.store: MemoryStore = open_store(store, embedder=embedder) if embedder else open_store(store)
        else:
            self.store = store
            current = getattr(store, "embedder", None)
            if embedder is not None and not isinstance(current, ItemEmbedder):
                raise MemoryValidationError(
                    "index['embed'] becomes the store's embedder: pass the store's URL instead of a store object, "
                    "or open the store with embedder=item_embedder(index).",
                    [{"loc": "index", "msg": "the store does not embed with it"}],
                )
            if embedder is None and isinstance(current, ItemEmbedder):
                embedder = current
        self._embedder: ItemEmbedder | None = embedder
        if self.index_config is not None and embedder is not None:
            self.index_config.setdefault("fields", embedder.fields)
        self.embeddings = embedder.embeddings if embedder is not None else None
        if not isinstance(self.store, AdminMemoryStore):
            raise MemoryValidationError(
                "MemoryAdminStore needs a store with the admin listing (every bundled backend has it)."
            )
        self._admin: AdminMemoryStore = self.store
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the store when the adapter opened it from a URL."""
        if self._owns:
            self.store.close()

    def __enter__(self) -> MemoryAdminStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the two entry points ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return cast(list[Result], run_steps(self._batch(list(ops)), self._answer))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # thousands of concurrent calls (asyncio.gather over aput/aget) wait here, not in the
        # store's connection pools, whose waits time out
        async with self._gate():
            return cast(list[Result], await arun_steps(self._batch(list(ops)), self._aanswer))

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(ASYNC_CONCURRENCY)
        return gate

    def _answer(self, call: _Call) -> Any:
        if call.method == "search":
            return self.store.search(*call.args, emit_event=False)
        if call.method == "list":
            return self._admin.list_records(*call.args)
        if call.method == "chain":
            return self._admin.chain(*call.args)
        return getattr(self.store, call.method)(*call.args)

    async def _aanswer(self, call: _Call) -> Any:
        if call.method == "search":
            return await self.store.asearch(*call.args, emit_event=False)
        if call.method == "write":
            return await self.store.awrite(*call.args)
        if call.method == "invalidate":
            return await self.store.ainvalidate(*call.args)
        # the admin extension has no async twins: a worker thread keeps the loop free
        return await asyncio.to_thread(self._answer, call)

    # --- scope ---------------------------------------------------------------------------

    def _run_config(self) -> Mapping[str, Any]:
        try:
            from langgraph.config import get_config
        except ImportError:  # langgraph-checkpoint alone: no runs to read
            return {}
        try:
            return get_config()
        except RuntimeError:  # outside a run
            return {}

    def _resolve_tenant(self, config: Mapping[str, Any]) -> str:
        if self._tenant is not None:
            return self._tenant
        value = (config.get("configurable") or {}).get(self._tenant_key)
        if not isinstance(value, str) or not value.strip():
            raise MemoryScopeError(
                f"No tenant: construct MemoryAdminStore(tenant=...) or run the graph with "
                f"config={{'configurable': {{'{self._tenant_key}': ...}}}}."
            )
        return canonical_scope({TENANT_KEY: value})[TENANT_KEY]

    def scope_of(self, namespace: tuple[str, ...], tenant: str | None = None) -> Scope:
        """The scope items of ``namespace`` are stored under."""
        tenant = tenant or self._resolve_tenant(self._run_config())
        for template in self._templates:
            pairs = template.pairs(namespace)
            if pairs is None:
                continue
            problems = scope_problems({TENANT_KEY: tenant, **pairs})
            stable = all(value == value.strip() for value in pairs.values())
            if problems or not stable:
                detail = "; ".join(p["msg"] for p in problems) or "labels that are scope values have no edge spaces"
                raise InvalidNamespaceError(
                    f"Namespace {namespace!r} matches template {template.labels!r}, but its labels are not scope "
                    f"values ({detail})."
                )
            return canonical_scope({TENANT_KEY: tenant, **pairs})
        return {TENANT_KEY: tenant}

    def _search_scope(self, prefix: tuple[str, ...], tenant: str) -> Scope:
        # a prefix long enough to decide a template narrows the scope too (the key prefix decides anyway)
        for template in self._templates:
            if len(prefix) >= len(template.labels) and template.pairs(prefix) is not None:
                return self.scope_of(prefix, tenant)
        return {TENANT_KEY: tenant}

    # --- one batch -----------------------------------------------------------------------

    def _batch(self, ops: list[Op]) -> _Steps:
        config = self._run_config()
        tenant = self._resolve_tenant(config)
        provenance = self._provenance(config)
        for op in ops:
            self._check_op(op)
        # everything that will be written is built (and refused) before anything is read or written
        puts: dict[tuple[tuple[str, ...], str], _Put] = {}
        for op in ops:
            if isinstance(op, PutOp):
                put = self._prepare_put(op, tenant, provenance)
                puts.pop((put.namespace, put.key), None)  # the last op on a key wins
                puts[(put.namespace, put.key)] = put
        self._check_limits(puts.values())

        results: list[Result] = [None] * len(ops)
        chains: _Chains = {}  # the chains this batch read, by the id of each of their versions
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            found = yield from self._heads([(op.namespace, op.key) for _, op in gets], tenant, chains)
            for i, op in gets:
                head = found.get((op.namespace, op.key))
                results[i] = (yield from self._item(head[0], head[1], chains)) if head is not None else None
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = yield from self._search(op, tenant, chains)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._list_namespaces(op, tenant, chains)
        if puts:
            yield from self._apply(list(puts.values()), tenant, chains)
        return results

    def _check_op(self, op: Op) -> None:
        if isinstance(op, GetOp):
            _check_labels(op.namespace)
            _check_key(op.key)
        elif isinstance(op, PutOp):
            namespace = _check_labels(op.namespace)
            # the root label "langgraph" is refused by BaseStore.put, as in every LangGraph store; a batch
            # may write there (LangGraph's own runtime does)
            if not namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            _check_key(op.key)
            if op.ttl is not None:
                raise NotImplementedError("MemoryAdminStore does not support TTL; put with ttl=None.")
        elif isinstance(op, SearchOp):
            _check_labels(op.namespace_prefix, what="namespace prefix")
            check_filter(op.filter)
            if op.query is not None and (not isinstance(op.query, str) or holds_lone_surrogate(op.query)):
                raise MemoryValidationError("A search query is UTF-8 text.", [{"loc": "query", "msg": "text"}])
            _check_page(op.limit, op.offset)
        elif isinstance(op, ListNamespacesOp):
            for condition in op.match_conditions or ():
                if condition.match_type not in ("prefix", "suffix"):
                    raise MemoryValidationError(f"Unknown match type {condition.match_type!r}; use prefix or suffix.")
                _check_labels(condition.path, what="namespace path")
            if op.max_depth is not None and (not isinstance(op.max_depth, int) or op.max_depth < 1):
                raise MemoryValidationError("max_depth is a positive integer.", [{"loc": "max_depth", "msg": ">= 1"}])
            _check_page(op.limit, op.offset)
        else:
            raise MemoryValidationError(f"Unknown store operation {type(op).__name__}.")

    def _provenance(self, config: Mapping[str, Any]) -> Provenance:
        configurable = config.get("configurable") or {}
        thread, run = configurable.get("thread_id"), config.get("run_id")

        def fits(value: object) -> str | None:
            text = str(value) if value is not None else None
            return text if text and len(text) <= 200 and not holds_lone_surrogate(text) else None

        return Provenance(source=SOURCE, conversation_id=fits(thread), run_id=fits(run))

    def _prepare_put(self, op: PutOp, tenant: str, provenance: Provenance) -> _Put:
        namespace, key = tuple(op.namespace), op.key
        scope = self.scope_of(namespace, tenant)
        slot = item_slot(namespace, key)
        if op.value is None:
            return _Put(namespace, key, slot, scope, None)
        index = op.index if self._embedder is not None else None
        if index is not None and index is not False:
            if isinstance(index, str) or not all(isinstance(f, str) for f in index):
                raise MemoryValidationError("index is False or a list of field paths.", [{"loc": "index", "msg": ""}])
            index = list(index)
        content = encode_item(namespace, key, op.value, index)
        tags = [TAG]
        if self._embedder is not None and not self._embedder.texts_of(op.value, index):
            tags.append(UNINDEXED_TAG)
        try:
            write = MemoryWriteInput(
                scope=scope, kind="fact", content=content, key=slot, tags=tuple(tags), provenance=provenance
            )
        except ValueError as exc:  # pydantic's ValidationError: content our records refuse
            raise MemoryValidationError(
                f"The item cannot be stored: {exc}", [{"loc": "value", "msg": str(exc)}]
            ) from None
        return _Put(namespace, key, slot, scope, write)

    def _check_limits(self, puts: Iterable[_Put]) -> None:
        caps = self.store.capabilities()
        for put in puts:
            if put.write is not None and len(put.write.content) > caps.max_content_chars:
                raise MemoryLimitError(
                    f"Item {put.key!r} in {put.namespace!r} is {len(put.write.content)} characters as JSON; "
                    f"{caps.backend} holds at most {caps.max_content_chars}. Nothing in the batch was written.",
                    limit=caps.max_content_chars,
                )

    # --- reads -------------------------------------------------------------------------

    def _heads(self, wanted: Sequence[tuple[tuple[str, ...], str]], tenant: str, chains: _Chains) -> _Steps:
        """The live record of each ``(namespace, key)`` that has one, and the item it holds."""
        slots = {item_slot(ns, key): (ns, key) for ns, key in wanted}
        found: dict[tuple[tuple[str, ...], str], tuple[MemoryRecord, StoredItem]] = {}
        names = list(slots)
        for start in range(0, len(names), GET_CHUNK):
            chunk = names[start : start + GET_CHUNK]
            query = MemorySearchQuery(scope={TENANT_KEY: tenant}, keys=tuple(chunk), limit=len(chunk) * 2)
            hits: list[MemoryHit] = yield _Call("search", (query,))
            for hit in hits:
                target = slots.get(hit.record.key or "")
                if target is None:
                    continue
                item = yield from self._stored(hit.record, chains)
                if item is not None and (item.namespace, item.key) == target:
                    found.setdefault(target, (hit.record, item))
        return found

    def _stored(self, record: MemoryRecord, chains: _Chains) -> Generator[_Call, Any, StoredItem | None]:
        """The item ``record`` holds. A version someone wrote by hand (a curator's correction
        in the dashboard: a plain sentence) holds ``{"content": <its text>}`` at the
        namespace and key of the version it corrected."""
        stored = decode_item(record.content)
        if stored is not None or record.supersedes is None:
            return stored
        links = yield from self._chain(record, chains)
        versions = [link.record for link in links if link.record is not None]
        for version in reversed([v for v in versions if v.created_at <= record.created_at]):
            found = decode_item(version.content)
            if found is not None:
                return StoredItem(found.namespace, found.key, {"content": record.content}, None)
        return None

    def _chain(self, record: MemoryRecord, chains: _Chains) -> Generator[_Call, Any, list[ChainLink]]:
        if record.id not in chains:
            links: list[ChainLink] = yield _Call("chain", (record.id,))
            for link in links:
                chains[link.id] = links
        return chains[record.id]

    def _item(
        self,
        record: MemoryRecord,
        stored: StoredItem,
        chains: _Chains,
        score: float | None = None,
        *,
        searched: bool = False,
    ) -> _Steps:
        created = record.created_at
        if record.supersedes is not None:
            links = yield from self._chain(record, chains)
            created = next((link.record.created_at for link in links if link.record is not None), created)
        if searched:
            return SearchItem(stored.namespace, stored.key, stored.value, created, record.created_at, score)
        return Item(
            value=stored.value,
            key=stored.key,
            namespace=stored.namespace,
            created_at=created,
            updated_at=record.created_at,
        )

    def _search(self, op: SearchOp, tenant: str, chains: _Chains) -> _Steps:
        prefix = tuple(op.namespace_prefix)
        filter = check_filter(op.filter)
        query = op.query if op.query and op.query.strip() else None
        want = op.offset + op.limit
        if op.limit == 0:
            return []
        ranked = query is not None
        size = min(self.store.capabilities().max_limit, max(want, PAGE if filter else 10))
        search = parse_model(
            MemorySearchQuery,
            {
                "scope": self._search_scope(prefix, tenant),
                "query": query,
                "keys": (namespace_slot(prefix),),
                "key_match": "prefix",
                "limit": size,
                # LangGraph's stores rank every item the filter admits, the nearest first
                "relevance": "rank",
            },
            what="search",
        )
        kept: list[tuple[MemoryRecord, StoredItem, float | None]] = []
        scoreless: list[tuple[MemoryRecord, StoredItem]] = []
        cursor: str | None = None
        while True:
            page: RecordPage = yield _Call("list", (RecordListQuery(search=search, cursor=cursor),))
            for hit in page.hits:
                stored = yield from self._stored(hit.record, chains)
                if stored is None or stored.namespace[: len(prefix)] != prefix:
                    continue  # a digest collision, or a record the adapter did not write
                if filter and not matches_filter(stored.value, filter):
                    continue
                if ranked and self._embedder is not None and UNINDEXED_TAG in hit.record.tags:
                    scoreless.append((hit.record, stored))
                    continue
                kept.append((hit.record, stored, hit.score if ranked else None))
            if len(kept) >= want or page.next_cursor is None:
                break
            cursor = page.next_cursor
            search = search.model_copy(update={"limit": min(self.store.capabilities().max_limit, PAGE * 5)})
        if len(kept) < want:
            # as LangGraph's in-memory store: items without vectors fill a page the scored ones left short
            kept.extend((record, stored, None) for record, stored in scoreless)
        items = []
        for record, stored, score in kept[op.offset : want]:
            items.append((yield from self._item(record, stored, chains, score, searched=True)))
        return items

    def _list_namespaces(self, op: ListNamespacesOp, tenant: str, chains: _Chains) -> _Steps:
        conditions = tuple(op.match_conditions or ())
        lead: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                if len(fixed) > len(lead):
                    lead = tuple(fixed)
        search = MemorySearchQuery(
            scope={TENANT_KEY: tenant},
            keys=(namespace_slot(lead),),
            key_match="prefix",
            limit=self.store.capabilities().max_limit,
        )
        namespaces: set[tuple[str, ...]] = set()
        cursor: str | None = None
        while True:
            page: RecordPage = yield _Call("list", (RecordListQuery(search=search, cursor=cursor),))
            for hit in page.hits:
                stored = yield from self._stored(hit.record, chains)
                if stored is not None and all(_namespace_matches(c, stored.namespace) for c in conditions):
                    namespaces.add(stored.namespace)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # --- writes ------------------------------------------------------------------------

    def _apply(self, puts: list[_Put], tenant: str, chains: _Chains) -> _Steps:
        writes = [put.write for put in puts if put.write is not None]
        deletes = [put for put in puts if put.write is None]
        if writes:
            # one atomic batch: a live key slot is superseded by the store itself
            yield _Call("write", (writes,))
        if deletes:
            heads = yield from self._heads([(put.namespace, put.key) for put in deletes], tenant, chains)
            for record, _ in heads.values():
                try:
                    yield _Call("invalidate", (record.id, DELETE_REASON))
                except MemoryStoreError as exc:
                    if exc.code != "not_found":  # forgotten meanwhile: nothing left to invalidate
                        raise
        return None


def _check_page(limit: object, offset: object) -> None:
    for name, value in (("limit", limit), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise MemoryValidationError(f"{name} is a non-negative integer.", [{"loc": name, "msg": ">= 0"}])


__all__ = [
    "DEFAULT_NAMESPACES",
    "MemoryAdminStore",
    "NamespaceTemplate",
    "item_embedder",
    "matches_filter",
]
