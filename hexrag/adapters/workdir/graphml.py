"""GraphML reading and writing for LightRAG's ``graph_chunk_entity_relation.graphml``.

LightRAG keeps its graph in an ``nx.Graph`` that it loads with ``nx.read_graphml`` and saves
with ``nx.write_graphml``. Query results depend on that graph's adjacency order (LightRAG walks
``graph.edges(node)``), so the reader here reproduces ``nx.read_graphml`` *exactly*:

* nodes in file order (a repeated node id updates the first one's attributes in place), then
  nodes that only appear as edge endpoints, in edge order;
* ``nx.read_graphml`` first builds a ``MultiGraph`` in file order and, when no pair has two
  edges, converts it with ``nx.Graph(multigraph)``. That conversion re-inserts the edges node
  by node, which changes each node's neighbour order. :func:`read_graphml` returns the edges
  in the order (and orientation) of ``nx.read_graphml(path).edges(data=True)``, so inserting
  them in that order into any graph with insertion-ordered adjacency reproduces networkx's
  adjacency exactly. A file with parallel edges stays a multigraph in file order, as in
  networkx.
* attribute values are typed from the ``<key attr.type=...>`` declarations as networkx does
  (``int``/``long`` -> ``int``, ``float``/``double`` -> ``float``, ``boolean`` -> ``bool``,
  else ``str``; an empty ``<data/>`` is ``""``).

It is a streaming ``expat`` parser: it keeps no XML tree, only the attribute dicts, and is
several times faster than ``nx.read_graphml`` (``bench/workdir_load.py`` measures both).

The writer produces the bytes ``nx.write_graphml`` (ElementTree flavour, the one LightRAG
uses when ``lxml`` is absent) produces for the same graph, except that a carriage return in
text is written as ``&#13;`` so that it survives a read (networkx would silently turn it into
a newline).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.parsers import expat

from hexrag.domain.errors import ConfigurationError

__all__ = ["GraphMLData", "read_graphml", "write_graphml"]

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
SCHEMA_LOCATION = (
    "http://graphml.graphdrawing.org/xmlns "
    "http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd"
)

_BOOL = {"true": True, "false": False, "0": False, "1": True}


def _to_bool(text: str) -> bool:
    return _BOOL[text.lower()]


_PY_TYPES: dict[str, Any] = {
    "integer": int,
    "int": int,
    "long": int,
    "float": float,
    "double": float,
    "boolean": _to_bool,
    "string": str,
    "yfiles": str,
}


@dataclass(slots=True)
class GraphMLData:
    """A parsed GraphML graph, ordered exactly as ``nx.read_graphml`` orders it.

    ``nodes`` maps node id -> attributes in networkx node order. ``edges`` holds
    ``(u, v, attributes)`` in the order and orientation of
    ``nx.read_graphml(path).edges(data=True)``. ``multigraph`` is true when some pair has
    several edges (networkx then returns a ``MultiGraph`` and keeps file order).
    """

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    multigraph: bool = False


class _Reader:
    """expat callbacks; a small state machine over graphml/key/graph/node/edge/data."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.keys: dict[str, tuple[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.file_edges: list[tuple[str, str, dict[str, Any]]] = []
        self.edge_ids: dict[tuple[str, str], str] = {}
        self.depth = 0
        self.graph_depth = -1  # depth of the first top-level <graph>
        self.graphs_seen = 0
        self.skip_graph = False
        self.key: dict[str, Any] | None = None
        self.owner: dict[str, Any] | None = None  # attrs of the current node/edge
        self.node_id: str | None = None
        self.edge: tuple[str, str, str | None] | None = None
        self.data_key: str | None = None
        self.data_text: list[str] = []
        self.data_depth = -1
        self.data_children = False

    def fail(self, message: str) -> ConfigurationError:
        return ConfigurationError(f"malformed GraphML file {self.source}: {message}")

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        local = name.rpartition("}")[2]
        if self.data_key is not None:
            self.data_children = True  # yfiles-style payload: ignored, as a label-less value
            return
        if local == "key":
            self.key = attrs
            return
        if local == "graph":
            if self.owner is not None:
                raise self.fail("nested graphs are not supported")
            self.graphs_seen += 1
            if self.graphs_seen > 1:
                self.skip_graph = True  # networkx returns the first graph only
                return
            self.graph_depth = self.depth
            if attrs.get("edgedefault") == "directed":
                raise self.fail("the graph is directed; LightRAG graphs are undirected")
            return
        if self.skip_graph or self.graph_depth < 0:
            return  # outside the first top-level graph (graph-level data is not kept)
        if local == "node" and self.depth == self.graph_depth + 1:
            node_id = attrs.get("id")
            if node_id is None:
                raise self.fail("a <node> has no id")
            self.node_id = node_id
            self.owner = {}
        elif local == "edge" and self.depth == self.graph_depth + 1:
            src, tgt = attrs.get("source"), attrs.get("target")
            if src is None or tgt is None:
                raise self.fail("an <edge> lacks its source or target")
            if attrs.get("directed") == "true":
                raise self.fail("directed edge in an undirected graph")
            self.edge = (src, tgt, attrs.get("id"))
            self.owner = {}
        elif local == "hyperedge":
            raise self.fail("hyperedges are not supported")
        elif local == "data" and self.owner is not None:
            key = attrs.get("key")
            if key is None or key not in self.keys:
                raise self.fail(f"no <key> declared for data key {key!r}")
            self.data_key = key
            self.data_text = []
            self.data_depth = self.depth
            self.data_children = False

    def end(self, name: str) -> None:
        local = name.rpartition("}")[2]
        depth = self.depth
        self.depth -= 1
        if self.data_key is not None:
            if depth != self.data_depth:
                return
            key, self.data_key = self.data_key, None
            if self.data_children:
                return
            attr_name, convert = self.keys[key]
            assert self.owner is not None
            if not self.data_text:
                self.owner[attr_name] = ""
                return
            text = "".join(self.data_text)
            try:
                self.owner[attr_name] = convert(text)
            except (ValueError, KeyError) as exc:
                raise self.fail(f"bad value {text!r} for attribute {attr_name!r}") from exc
            return
        if local == "key" and self.key is not None:
            self._register_key(self.key)
            self.key = None
            return
        if local == "graph" and depth == self.graph_depth:
            self.graph_depth = -2  # done with the first graph
            return
        if local == "node" and self.node_id is not None and self.owner is not None:
            existing = self.nodes.get(self.node_id)
            if existing is None:
                self.nodes[self.node_id] = self.owner
            else:
                existing.update(self.owner)
            self.node_id = None
            self.owner = None
        elif local == "edge" and self.edge is not None and self.owner is not None:
            src, tgt, edge_id = self.edge
            if edge_id:
                self.edge_ids[(src, tgt)] = edge_id
            self.file_edges.append((src, tgt, self.owner))
            self.edge = None
            self.owner = None

    def chars(self, data: str) -> None:
        if self.data_key is not None and self.depth == self.data_depth:
            self.data_text.append(data)

    def _register_key(self, attrs: dict[str, str]) -> None:
        key_id, attr_name, attr_type = _key_declaration(attrs)
        if key_id is None or attr_name is None:
            raise self.fail(f"<key id={key_id!r}> has no attr.name")
        convert = _PY_TYPES.get(attr_type)
        if convert is None:
            raise self.fail(f"unknown attr.type {attr_type!r} for key {key_id!r}")
        self.keys[key_id] = (attr_name, convert)


def read_graphml(path: str | Path) -> GraphMLData:
    """Parse ``path`` into nodes and edges ordered exactly like ``nx.read_graphml``.

    Raises :class:`~hexrag.core.errors.ConfigurationError` (naming the file) on malformed XML,
    an undeclared data key, an unparsable typed value, a directed graph, nested graphs or
    hyperedges.
    """
    raw = Path(path).read_bytes()
    fast = _read_fast(raw)
    if fast is not None:
        return _order_like_networkx(*fast)
    return _order_like_networkx(*_read_expat(raw, str(path)))


def _read_expat(
    raw: bytes, source: str
) -> _Parsed:
    """The general path: a streaming expat parse (any well-formed GraphML)."""
    reader = _Reader(source)
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.buffer_size = 1 << 20
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.chars
    try:
        parser.Parse(raw, True)
    except expat.ExpatError as exc:
        raise ConfigurationError(f"malformed GraphML file {source}: {exc}") from exc
    if reader.graphs_seen == 0:
        raise ConfigurationError(f"malformed GraphML file {source}: no <graph> element")
    return reader.nodes, reader.file_edges, reader.edge_ids


# The fast path: one regex scan over files in the shape networkx (and so LightRAG) writes.
# Anything it does not fully understand (comments, CDATA, prefixes, single-quoted data keys,
# nested elements in <data>, unknown elements, a second graph, errors) makes it give up and
# the expat path parses the file instead, so both paths always agree.
_PLAIN = r'"([^"&<\t\n\r]*)"'  # an attribute value that needs no decoding
_TOKEN = re.compile(
    r'<data key="([^"]*)"(?:\s*/>|\s*>([^<]*)</data>)'
    rf"|<node id={_PLAIN}\s*(/?)>"
    rf"|<edge source={_PLAIN} target={_PLAIN}\s*(/?)>"
    r"|<(node|edge)(\s[^>]*?)?(/?)>"
    r"|</(node|edge)>"
    r"|<([^>]*)>"
)
_ATTR = re.compile(r"""([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_ATTRS_OK = re.compile(r"""(?:\s+[\w.:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*/?""")
_ENTITY = re.compile(r"&(#x[0-9A-Fa-f]+|#[0-9]+|amp|lt|gt|quot|apos);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_OTHER_OK = ("graphml", "/graphml", "key", "/key", "default", "/default", "/graph")


_Parsed = tuple[
    dict[str, dict[str, Any]], list[tuple[str, str, dict[str, Any]]], dict[tuple[str, str], str]
]


class _GiveUp(Exception):
    """The fast path met something it leaves to expat."""


def _entity(m: re.Match[str]) -> str:
    name = m.group(1)
    if name[0] == "#":
        code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
        return chr(code)
    return _NAMED[name]


def _decode_text(text: str) -> str:
    """XML character data -> str: end-of-line normalisation, then entity expansion."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "&" in text:
        if text.count("&") != len(_ENTITY.findall(text)):
            raise _GiveUp  # a bare "&" or an unknown entity: let expat report it
        text = _ENTITY.sub(_entity, text)
    return text


def _attrs(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    if _ATTRS_OK.fullmatch(text) is None:
        raise _GiveUp
    out = {}
    for name, dq, sq in _ATTR.findall(text):
        value = dq if dq or not sq else sq
        # attribute-value normalisation: literal whitespace becomes a space
        value = value.replace("\r\n", " ").replace("\r", " ").replace("\n", " ").replace("\t", " ")
        out[name] = _decode_text(value)
    return out


def _read_fast(
    raw: bytes,
) -> _Parsed | None:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    try:
        return _scan(text)
    except _GiveUp:
        return None


def _scan(
    text: str,
) -> _Parsed:
    keys: dict[str, tuple[str, Any]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    file_edges: list[tuple[str, str, dict[str, Any]]] = []
    edge_ids: dict[tuple[str, str], str] = {}
    owner: dict[str, Any] | None = None
    node_id: str | None = None
    edge: tuple[str, str] | None = None
    state = 0  # 0 before the graph, 1 inside it, 2 after it
    first = True
    for m in _TOKEN.finditer(text):
        (key, value, plain_node, node_closed, plain_src, plain_tgt, edge_closed, kind, attr_text,
         self_closing, closing, other) = m.groups()
        if key is not None:
            if owner is None:
                if state != 1:
                    raise _GiveUp
                continue  # graph-level data: not kept (networkx keeps it on G.graph)
            spec = keys.get(key)
            if spec is None:
                raise _GiveUp
            name, convert = spec
            if not value:
                owner[name] = ""
                continue
            if "&" in value or "\r" in value:
                value = _decode_text(value)
            if convert is str:
                owner[name] = value
                continue
            try:
                owner[name] = convert(value)
            except (ValueError, KeyError):
                raise _GiveUp from None
            continue
        if plain_node is not None or plain_src is not None:
            if state != 1 or owner is not None:
                raise _GiveUp
            owner = {}
            if plain_node is not None:
                node_id = plain_node
                if node_closed:
                    _close("node", nodes, file_edges, node_id, None, owner)
                    owner, node_id = None, None
            else:
                assert plain_tgt is not None
                edge = (plain_src, plain_tgt)
                if edge_closed:
                    _close("edge", nodes, file_edges, None, edge, owner)
                    owner, edge = None, None
            continue
        if kind is not None:
            if state != 1 or owner is not None:
                raise _GiveUp
            attrs = _attrs(attr_text)
            if kind == "node":
                nid = attrs.get("id")
                if nid is None:
                    raise _GiveUp
                node_id, owner = nid, {}
            else:
                src, tgt = attrs.get("source"), attrs.get("target")
                if src is None or tgt is None or attrs.get("directed") == "true":
                    raise _GiveUp
                edge, owner = (src, tgt), {}
                if attrs.get("id"):
                    edge_ids[(src, tgt)] = attrs["id"]
            if self_closing:
                _close(kind, nodes, file_edges, node_id, edge, owner)
                owner, node_id, edge = None, None, None
            continue
        if closing is not None:
            if owner is None or (closing == "node") != (node_id is not None):
                raise _GiveUp
            _close(closing, nodes, file_edges, node_id, edge, owner)
            owner, node_id, edge = None, None, None
            continue
        if first and other.startswith("?xml"):
            enc = re.search(r"""encoding\s*=\s*["']([^"']+)["']""", other)
            if enc and enc.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
                raise _GiveUp
            first = False
            continue
        first = False
        name = other.split(None, 1)[0].rstrip("/") if other.strip() else ""
        if name == "graph":
            if state != 0:
                raise _GiveUp  # a second graph, or a nested one
            attrs = _attrs(other[5:])
            if attrs.get("edgedefault") == "directed" or other.endswith("/"):
                raise _GiveUp
            state = 1
        elif name == "/graph":
            if state != 1 or owner is not None:
                raise _GiveUp
            state = 2
        elif name == "key":
            attrs = _attrs(other[3:])
            _register_key(keys, attrs)
        elif name in _OTHER_OK:
            if name in ("graphml", "default"):
                _attrs(other[len(name) :])
        else:
            raise _GiveUp
    if state != 2:
        raise _GiveUp
    return nodes, file_edges, edge_ids


def _close(
    kind: str,
    nodes: dict[str, dict[str, Any]],
    file_edges: list[tuple[str, str, dict[str, Any]]],
    node_id: str | None,
    edge: tuple[str, str] | None,
    owner: dict[str, Any],
) -> None:
    if kind == "node":
        assert node_id is not None
        existing = nodes.get(node_id)
        if existing is None:
            nodes[node_id] = owner
        else:
            existing.update(owner)
    else:
        assert edge is not None
        file_edges.append((edge[0], edge[1], owner))


def _key_declaration(attrs: dict[str, str]) -> tuple[str | None, str | None, str]:
    """A ``<key>``'s id, attribute name and type, as NetworkX reads them (a yfiles key is
    named by its ``yfiles.type``; the type defaults to ``string``)."""
    key_id = attrs.get("id")
    attr_type = attrs.get("attr.type")
    attr_name = attrs.get("attr.name")
    if attrs.get("yfiles.type") is not None:
        attr_name, attr_type = attrs["yfiles.type"], "yfiles"
    if attr_type is None:
        attr_type = "string"
    return key_id, attr_name, attr_type


def _register_key(keys: dict[str, tuple[str, Any]], attrs: dict[str, str]) -> None:
    key_id, attr_name, attr_type = _key_declaration(attrs)
    convert = _PY_TYPES.get(attr_type)
    if key_id is None or attr_name is None or convert is None:
        raise _GiveUp
    keys[key_id] = (attr_name, convert)


def _order_like_networkx(
    nodes: dict[str, dict[str, Any]],
    file_edges: list[tuple[str, str, dict[str, Any]]],
    edge_ids: dict[tuple[str, str], str],
) -> GraphMLData:
    # The MultiGraph adjacency networkx builds while reading (file order); values are edge
    # indexes into file_edges.
    adj: dict[str, dict[str, int]] = {n: {} for n in nodes}
    multigraph = False
    for i, (src, tgt, _) in enumerate(file_edges):
        a = adj.get(src)
        if a is None:
            a = adj[src] = {}
            nodes[src] = {}
        b = adj.get(tgt)
        if b is None:
            b = adj[tgt] = {}
            nodes[tgt] = {}
        if tgt in a:
            multigraph = True
        else:
            a[tgt] = i
            b[src] = i
    if multigraph:
        # networkx keeps the MultiGraph: edges in file order, edge ids as keys, not attributes.
        return GraphMLData(nodes=nodes, edges=list(file_edges), multigraph=True)
    for (src, tgt), edge_id in edge_ids.items():
        # nx.set_edge_attributes(G, edge_ids, "id") after the Graph conversion
        file_edges[adj[src][tgt]][2]["id"] = edge_id
    # nx.Graph(multigraph): for u in nodes, for v in adj[u], add (u, v) unless already added
    # from v's side.
    ordered: list[tuple[str, str, dict[str, Any]]] = []
    done = bytearray(len(file_edges))
    for u, nbrs in adj.items():
        for v, i in nbrs.items():
            if not done[i]:
                done[i] = 1
                ordered.append((u, v, file_edges[i][2]))
    return GraphMLData(nodes=nodes, edges=ordered, multigraph=False)


# ----------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------


_XML_TYPES: dict[type, str] = {bool: "boolean", int: "long", float: "double", str: "string"}


def _xml_type(value: Any) -> str:
    xml_type = _XML_TYPES.get(type(value))
    if xml_type is not None:
        return xml_type
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    raise ConfigurationError(
        f"GraphML cannot store a {type(value).__name__} attribute value ({value!r})"
    )


# What ElementTree's serializer escapes, in its order ("&" first): in text, then also in
# attribute values.
_TEXT_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\r", "&#13;"))
_ATTR_ESCAPES = (*_TEXT_ESCAPES, ('"', "&quot;"), ("\n", "&#10;"), ("\t", "&#09;"))


def _replace_each(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for old, new in table:
        if old in text:
            text = text.replace(old, new)
    return text


def _escape_text(text: str) -> str:
    return _replace_each(text, _TEXT_ESCAPES)


def _escape_attr(text: str) -> str:
    return _replace_each(text, _ATTR_ESCAPES)


def write_graphml(
    target: str | Path | IO[str],
    nodes: Sequence[tuple[str, Mapping[str, Any]]],
    edges: Sequence[tuple[str, str, Mapping[str, Any]]],
) -> None:
    """Write an undirected graph the way ``nx.write_graphml`` writes an ``nx.Graph``.

    ``nodes`` are ``(id, attributes)`` and ``edges`` ``(source, target, attributes)``, written
    in the given order. Attribute values must be ``str``, ``int``, ``float`` or ``bool``
    (:class:`~hexrag.core.errors.ConfigurationError` otherwise); ``None`` values are skipped.
    ``target`` is a path or a text stream opened with ``encoding="utf-8"``.
    """
    keys: dict[tuple[str, str, str], str] = {}  # (name, xml type, scope) -> key id
    # per scope: (name, python type) -> key id, so writing needs one dict lookup per value
    lookup: dict[str, dict[tuple[str, type], str]] = {"node": {}, "edge": {}}

    def scan(attrs: Mapping[str, Any], scope: str) -> None:
        table = lookup[scope]
        for name, value in attrs.items():
            if value is None or (name, type(value)) in table:
                continue
            k = (name, _xml_type(value), scope)
            kid = keys.get(k)
            if kid is None:
                kid = keys[k] = f"d{len(keys)}"
            table[(name, type(value))] = kid

    # Pass 1: key ids, in networkx's order (nodes first, then edges, attribute order).
    for _, attrs in nodes:
        scan(attrs, "node")
    for _, _, attrs in edges:
        scan(attrs, "edge")
    _emit(target, _document(nodes, edges, keys, lookup))


def _document(
    nodes: Sequence[tuple[str, Mapping[str, Any]]],
    edges: Sequence[tuple[str, str, Mapping[str, Any]]],
    keys: dict[tuple[str, str, str], str],
    lookup: dict[str, dict[tuple[str, type], str]],
) -> Iterator[str]:
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    yield (
        f'<graphml xmlns="{GRAPHML_NS}" xmlns:xsi="{XSI_NS}" '
        f'xsi:schemaLocation="{SCHEMA_LOCATION}">\n'
    )
    for (name, xml_type, scope), kid in reversed(keys.items()):
        yield (
            f'  <key id="{kid}" for="{scope}" attr.name="{_escape_attr(name)}" '
            f'attr.type="{xml_type}" />\n'
        )
    if not nodes and not edges:
        yield '  <graph edgedefault="undirected" />\n</graphml>\n'
        return
    yield '  <graph edgedefault="undirected">\n'

    def data_lines(attrs: Mapping[str, Any], table: dict[tuple[str, type], str]) -> str:
        lines = []
        for name, value in attrs.items():
            if value is None:
                continue
            kid = table[(name, type(value))]
            text = _escape_text(value if type(value) is str else str(value))
            if text:
                lines.append(f'      <data key="{kid}">{text}</data>\n')
            else:
                lines.append(f'      <data key="{kid}" />\n')
        return "".join(lines)

    node_table, edge_table = lookup["node"], lookup["edge"]
    for node_id, attrs in nodes:
        body = data_lines(attrs, node_table)
        if body:
            yield f'    <node id="{_escape_attr(node_id)}">\n{body}    </node>\n'
        else:
            yield f'    <node id="{_escape_attr(node_id)}" />\n'
    for src, tgt, attrs in edges:
        head = f'    <edge source="{_escape_attr(src)}" target="{_escape_attr(tgt)}"'
        body = data_lines(attrs, edge_table)
        if body:
            yield f"{head}>\n{body}    </edge>\n"
        else:
            yield head + " />\n"
    yield "  </graph>\n</graphml>\n"


def _emit(target: str | Path | IO[str], parts: Iterable[str]) -> None:
    if isinstance(target, (str, Path)):
        with open(
            target, "w", encoding="utf-8", errors="xmlcharrefreplace", newline="\n"
        ) as fh:
            _write_parts(fh, parts)
    else:
        _write_parts(target, parts)


def _write_parts(fh: IO[str], parts: Iterable[str]) -> None:
    buf = io.StringIO()
    size = 0
    for part in parts:
        buf.write(part)
        size += len(part)
        if size > (1 << 20):
            fh.write(buf.getvalue())
            buf = io.StringIO()
            size = 0
    fh.write(buf.getvalue())
