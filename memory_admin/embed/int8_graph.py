"""The default model's int8 weights, multiplied as int8.

The packaged all-MiniLM-L6-v2 file stores each weight matrix as int8 codes with a float
scale per column, turned back into floats inside the graph (``Cast`` then ``Mul``) before
every ``MatMul``. onnxruntime folds those into constant float matrices at load: 88 MB of
float weights (and their packed copies) for a 23 MB file, multiplied in float.

:func:`int8_matmuls` rewrites the graph before onnxruntime sees it, without touching a
number: each such ``MatMul`` becomes onnxruntime's ``DynamicQuantizeMatMul`` over the
very same codes and scales (the activations are quantized to 8 bits as they arrive, the
product runs on the CPU's int8 instructions), and the embedding tables are gathered as
codes and scaled per row. Measured on two cores: the model holds about 45 MB instead of
160, loads with a peak of about 150 MB instead of 300, and embeds a query in about half
the time; its vectors agree with the float products' to a cosine of 0.99, and LoCoMo's
recall is unchanged (``docs/benchmarks/semantic.md``).

Activations are quantized over the whole input of a run, so a text's vector would depend
on the texts batched with it: :class:`~memory_admin.embed.local.OnnxEmbedder` therefore
runs such a graph one text at a time (on several threads at once).

It needs the ``onnx`` library (the ``semantic`` extra) to read and write the graph,
whose import alone takes about half a second: :func:`cached_int8_matmuls` keeps the
rewritten graph in the user's cache folder (``$XDG_CACHE_HOME/memory_admin``, or
``MEMORY_ADMIN_CACHE``), named by the source file's SHA-256 and this rewrite's version,
so later processes load it directly. A folder that cannot be written is no error: the
graph is then rewritten in memory each time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from memory_admin.embed.protocol import EmbedderError, numpy, require

log = logging.getLogger(__name__)

MICROSOFT = "com.microsoft"
"""onnxruntime's operator domain (``DynamicQuantizeMatMul``)."""
REWRITE_VERSION = 1
"""Part of a cached graph's name: a change to :func:`int8_matmuls` bumps it."""


def cache_folder() -> Path:
    """Where rewritten graphs are kept: ``MEMORY_ADMIN_CACHE``, else
    ``$XDG_CACHE_HOME/memory_admin`` (``~/.cache`` by default)."""
    named = os.environ.get("MEMORY_ADMIN_CACHE")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memory_admin"


def cached_int8_matmuls(path: Path) -> bytes:
    """:func:`int8_matmuls` of ``path``, from the cache folder when it was made before
    (and kept there for next time)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cached = cache_folder() / f"{path.stem}.{digest}.int8-v{REWRITE_VERSION}.onnx"
    try:
        return cached.read_bytes()
    except OSError:
        pass
    data = int8_matmuls(path)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        # whole or not at all: another process may be reading or writing the same name
        with tempfile.NamedTemporaryFile(dir=cached.parent, prefix=cached.name, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, cached)
    except OSError as exc:
        log.debug("the rewritten model is not cached (%s): it is rewritten at every load", exc)
    return data


def int8_matmuls(path: Path) -> bytes:
    """The ONNX model at ``path`` with its dequantize-then-multiply weights multiplied as
    int8 (see the module docstring), serialized. Raises :class:`EmbedderError` when the
    graph holds no such weight: it is not the model this was written for."""
    onnx = require("onnx", "onnx (reads the default model's graph)")
    np = numpy()
    numpy_helper, helper = onnx.numpy_helper, onnx.helper
    model = onnx.load(str(path))
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}

    def dequantized(name: str) -> tuple[str, str] | None:
        """``(codes, scales)`` when ``name`` is ``Mul(Cast(int8 codes), float scales)`` of initializers."""
        mul = producer.get(name)
        if mul is None or mul.op_type != "Mul":
            return None
        cast = next((producer[i] for i in mul.input if i in producer and producer[i].op_type == "Cast"), None)
        scales = next((i for i in mul.input if i in initializers), None)
        if cast is None or scales is None or cast.input[0] not in initializers:
            return None
        if initializers[cast.input[0]].data_type != onnx.TensorProto.INT8:
            return None
        return cast.input[0], scales

    nodes: list[Any] = []
    added: list[Any] = []
    rewritten = 0
    for node in graph.node:
        if node.op_type == "MatMul" and (weights := dequantized(node.input[1])) is not None:
            codes, scales = weights
            column = numpy_helper.to_array(initializers[scales]).astype("float32")
            columns = column.shape[-1]
            if column.size != columns:  # one scale per column, or not this kind of weight
                nodes.append(node)
                continue
            added += [
                numpy_helper.from_array(column.reshape(columns), f"{scales}.column"),
                numpy_helper.from_array(np.zeros(columns, dtype=np.int8), f"{codes}.zero"),
            ]
            nodes.append(
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [node.input[0], codes, f"{scales}.column", f"{codes}.zero"],
                    list(node.output),
                    name=f"{node.name}.int8",
                    domain=MICROSOFT,
                )
            )
            rewritten += 1
        elif node.op_type == "Gather" and (table := dequantized(node.input[0])) is not None:
            codes, scales = table
            out = node.output[0]
            nodes += [
                helper.make_node("Gather", [codes, node.input[1]], [f"{out}.codes"], name=f"{node.name}.codes", axis=0),
                helper.make_node(
                    "Gather", [scales, node.input[1]], [f"{out}.scales"], name=f"{node.name}.scales", axis=0
                ),
                helper.make_node("Cast", [f"{out}.codes"], [f"{out}.float"], to=onnx.TensorProto.FLOAT),
                helper.make_node("Mul", [f"{out}.float", f"{out}.scales"], [out], name=f"{node.name}.scaled"),
            ]
            rewritten += 1
        else:
            nodes.append(node)
    if not rewritten:
        raise EmbedderError(f"{path} holds no int8 weights dequantized before use: not the model expected")
    # the dequantizing nodes nothing reads any more, then the initializers nothing uses
    outputs = {value.name for value in graph.output}
    while True:
        read = {name for node in nodes for name in node.input} | outputs
        kept = [n for n in nodes if n.op_type not in ("Cast", "Mul") or any(o in read for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del graph.node[:]
    graph.node.extend(nodes)
    read = {name for node in nodes for name in node.input}
    unused = [init for init in graph.initializer if init.name not in read]
    for init in unused:
        graph.initializer.remove(init)
    graph.initializer.extend(added)
    if not any(opset.domain == MICROSOFT for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MICROSOFT, 1))
    data: bytes = model.SerializeToString()
    return data


__all__ = ["REWRITE_VERSION", "cache_folder", "cached_int8_matmuls", "int8_matmuls"]
