"""GraphML reading/writing of LightRAG's graph file, checked against networkx itself."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hexrag.adapters.workdir import graphml as gm
from hexrag.adapters.workdir.graphml import read_graphml, write_graphml
from hexrag.core.errors import ConfigurationError

NASTY = [
    "Alice",
    "Acme Corp",
    'quote " and apostrophe \'',
    "back\\slash",
    "amp & lt < gt >",
    "tab\tnew\nline",
    "Ünïcodé 中文 café",
    "&amp; literally",
    "chunk-1",
    "chunk-10",
    " padded ",
    "]]> cdata end",
]


def _random_graph(seed: int, n: int = 60, m: int = 160) -> nx.Graph:
    rng = random.Random(seed)
    names = [f"{rng.choice(NASTY)} #{i}" for i in range(n)]
    g = nx.Graph()
    order = names[:]
    rng.shuffle(order)
    for name in order[: n // 2]:  # the rest appear only as edge endpoints
        g.add_node(
            name,
            entity_id=name,
            entity_type=rng.choice(["person", "organization", ""]),
            description=rng.choice(NASTY),
            source_id="chunk-1<SEP>chunk-10",
            file_path="a.txt<SEP>b.txt",
            created_at=rng.randrange(1, 2**40),
        )
    for _ in range(m):
        a, b = rng.choice(names), rng.choice(names)  # self-loops included
        g.add_edge(
            a,
            b,
            weight=rng.choice([1.0, 2.5, 0.1 + rng.random()]),
            description=rng.choice(NASTY),
            keywords="k1,k2",
            source_id="chunk-1",
            file_path="a.txt",
            created_at=5,
            flag=rng.random() < 0.5,
        )
    return g


def _assert_same_as_networkx(path: Path) -> gm.GraphMLData:
    ref = nx.read_graphml(path)
    ours = read_graphml(path)
    assert list(ours.nodes.items()) == list(ref.nodes(data=True))
    assert ours.edges == list(ref.edges(data=True))
    return ours


@pytest.mark.parametrize("seed", range(4))
def test_reader_matches_networkx_order_and_types(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "g.graphml"
    nx.write_graphml(_random_graph(seed), path)
    assert gm._read_fast(path.read_bytes()) is not None  # the fast path handled it
    ours = _assert_same_as_networkx(path)
    expat = gm._order_like_networkx(*gm._read_expat(path.read_bytes(), str(path)))
    assert expat == ours
    # types come from the key declarations
    some = next(a for a in ours.nodes.values() if a)
    assert isinstance(some["created_at"], int)
    assert isinstance(ours.edges[0][2]["weight"], float)
    assert isinstance(ours.edges[0][2]["flag"], bool)


def test_edge_order_is_networkx_graph_conversion_order(tmp_path: Path) -> None:
    # In file order C-D comes before A-C; networkx's Graph conversion puts A-C first in C's
    # adjacency (node A is processed before C), and so must we.
    path = tmp_path / "g.graphml"
    path.write_text(
        """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <graph edgedefault="undirected">
    <node id="A" /><node id="B" /><node id="C" /><node id="D" />
    <edge source="A" target="B" /><edge source="D" target="C" /><edge source="C" target="A" />
  </graph>
</graphml>""",
        encoding="utf-8",
    )
    ours = _assert_same_as_networkx(path)
    assert [(u, v) for u, v, _ in ours.edges] == [("A", "B"), ("A", "C"), ("C", "D")]


def test_writer_is_byte_identical_to_networkx(tmp_path: Path) -> None:
    for seed in range(3):
        g = nx.read_graphml(_write(tmp_path, _random_graph(seed)))
        buf = io.StringIO()
        write_graphml(buf, list(g.nodes(data=True)), list(g.edges(data=True)))
        ref = io.BytesIO()
        nx.write_graphml(g, ref)
        assert buf.getvalue().encode("utf-8") == ref.getvalue()


def test_writer_empty_and_attributeless(tmp_path: Path) -> None:
    for g in (nx.Graph(), nx.Graph([("a", "b")])):
        g.add_node("c", empty="")
        buf = io.StringIO()
        write_graphml(buf, list(g.nodes(data=True)), list(g.edges(data=True)))
        ref = io.BytesIO()
        nx.write_graphml(g, ref)
        assert buf.getvalue().encode("utf-8") == ref.getvalue()
    buf = io.StringIO()
    write_graphml(buf, [], [])
    ref = io.BytesIO()
    nx.write_graphml(nx.Graph(), ref)
    assert buf.getvalue().encode() == ref.getvalue()


def _write(tmp_path: Path, g: nx.Graph) -> Path:
    path = tmp_path / "w.graphml"
    nx.write_graphml(g, path)
    return path


def test_carriage_return_survives_our_writer(tmp_path: Path) -> None:
    path = tmp_path / "cr.graphml"
    write_graphml(path, [("n\r1", {"description": "a\r\nb\rc"})], [])
    assert read_graphml(path).nodes == {"n\r1": {"description": "a\r\nb\rc"}}
    assert dict(nx.read_graphml(path).nodes(data=True)) == {"n\r1": {"description": "a\r\nb\rc"}}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12),
        min_size=1,
        max_size=8,
        unique=True,
    ),
    values=st.lists(
        st.one_of(
            st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
            st.integers(-(2**62), 2**62),
            st.floats(allow_nan=False, allow_infinity=False),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    data=st.data(),
)
def test_property_round_trip_through_networkx(
    tmp_path: Path, names: list[str], values: list[Any], data: st.DataObject
) -> None:
    nodes = [(n, {"v": values[i % len(values)]}) for i, n in enumerate(names)]
    pairs = data.draw(
        st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=10)
    )
    g = nx.Graph()
    g.add_nodes_from(nodes)
    for a, b in pairs:
        g.add_edge(a, b, w=1.5, d=values[0] if isinstance(values[0], str) else "x")
    path = tmp_path / "p.graphml"
    write_graphml(path, list(g.nodes(data=True)), list(g.edges(data=True)))
    ref = nx.read_graphml(path)
    ours = read_graphml(path)
    assert list(ours.nodes.items()) == list(ref.nodes(data=True)) == list(g.nodes(data=True))
    assert ours.edges == list(ref.edges(data=True))


@pytest.mark.parametrize(
    "body",
    [
        # comments, CDATA, single quotes, a namespace prefix, <desc>: the expat path takes over
        '<!-- a comment with <node id="ghost"/> --><graph edgedefault="undirected">'
        '<node id="a"><data key="d0"><![CDATA[x < y & z]]></data></node></graph>',
        "<graph edgedefault='undirected'><node id='a'><data key='d0'>v</data></node>"
        "<node id='b'/><edge source='a' target='b'/></graph>",
        '<graph edgedefault="undirected"><desc>text</desc><node id="a&#10;b">'
        '<data key="d0">&#x41;&apos;</data></node></graph>',
    ],
)
def test_unusual_but_valid_files_match_networkx(tmp_path: Path, body: str) -> None:
    path = tmp_path / "u.graphml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key id="d0" for="node" attr.name="description" attr.type="string"/>'
        f"{body}</graphml>",
        encoding="utf-8",
    )
    _assert_same_as_networkx(path)


def test_multigraph_file_keeps_file_order(tmp_path: Path) -> None:
    m = nx.MultiGraph()
    m.add_edge("a", "b", w=1.0)
    m.add_edge("b", "a", w=2.0)
    m.add_edge("c", "a")
    path = tmp_path / "m.graphml"
    nx.write_graphml(m, path)
    ours = _assert_same_as_networkx(path)
    assert ours.multigraph


def test_edge_id_attribute_like_networkx(tmp_path: Path) -> None:
    path = tmp_path / "e.graphml"
    path.write_text(
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="undirected">'
        '<node id="a"/><node id="b"/><edge id="e7" source="b" target="a"/></graph></graphml>',
        encoding="utf-8",
    )
    ours = _assert_same_as_networkx(path)
    assert ours.edges == [("a", "b", {"id": "e7"})]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<graphml><graph edgedefault='undirected'><node id='a'></graph>", "malformed GraphML"),
        (
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<graph edgedefault="undirected">'
            '<node id="a"><data key="nope">x</data></node></graph></graphml>',
            "no <key> declared",
        ),
        (
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<key id="d0" for="node" attr.name="n" attr.type="long"/>'
            '<graph edgedefault="undirected"><node id="a"><data key="d0">12x</data></node>'
            "</graph></graphml>",
            "bad value",
        ),
        (
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<graph edgedefault="directed"><node id="a"/></graph></graphml>',
            "directed",
        ),
        ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns"></graphml>', "no <graph>"),
        ("", "malformed GraphML"),
    ],
)
def test_malformed_files_raise_configuration_error_naming_the_file(
    tmp_path: Path, text: str, needle: str
) -> None:
    path = tmp_path / "bad.graphml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as err:
        read_graphml(path)
    assert needle in str(err.value)
    assert str(path) in str(err.value)


def test_unsupported_attribute_value_type_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="list"):
        write_graphml(io.StringIO(), [("a", {"x": [1, 2]})], [])
