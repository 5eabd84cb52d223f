import numpy as np
import pytest

from crawler.distillation import dom_hits, region_cost, region_tree, segment, top_authorities
from crawler.linkanalysis import LinkGraph, hits

GOOD = [10, 11, 12, 13, 14]  # pages many hubs point to
JUNK = [20, 21, 22, 23, 24]  # pages only the mixed hub points to
PURE_HUBS = [1, 2, 3]
MIXED_HUB = 4


def mixed_graph():
    """Three pure hubs list the good pages; the mixed hub has a list of the good pages in one <div> and a
    list of unrelated pages in another. Every page is on its own host."""
    paths: dict[int, list[tuple[int, str]]] = {}
    for hub in PURE_HUBS:
        paths[hub] = [(t, "html/body/ul/li/a") for t in GOOD]
    paths[MIXED_HUB] = [(t, "html/body/div/ul/li/a") for t in GOOD[:4]] + [
        (t, "html/body/div/p/a") for t in JUNK
    ]
    # an extra navigation link between the two lists separates two runs of the same tag path
    paths[MIXED_HUB].insert(4, (30, "html/body/nav/a"))
    nodes = {n for n in [*PURE_HUBS, MIXED_HUB, *GOOD, *JUNK, 30]}
    edges = [(s, t) for s, links in paths.items() for t, _ in links]
    graph = LinkGraph.build({n: f"h{n}.test" for n in nodes}, edges)
    return graph, paths


def test_region_tree_splits_runs_of_equal_paths_separated_by_other_links():
    paths = [("ul", "li", "a"), ("ul", "li", "a"), ("p", "a"), ("ul", "li", "a")]
    assert region_tree(paths) == [[0, 1], 2, 3]
    nested = [("div", "ul", "li", "a"), ("div", "ul", "li", "a"), ("div", "p", "a"), ("div", "p", "a")]
    assert region_tree(nested) == [[0, 1], [2, 3]]  # the <div> chain is collapsed


def test_homogeneous_region_stays_whole_and_mixed_one_is_split():
    tree = [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert segment(tree, np.array([1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)) == [list(range(8))]
    assert segment(tree, np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_region_cost_prefers_pure_regions():
    assert region_cost(8, 8) < region_cost(4, 8)
    assert region_cost(0, 8) == pytest.approx(region_cost(8, 8))


def test_unsegmented_dom_hits_is_bharat_henzinger_hits():
    graph, paths = mixed_graph()
    plain = hits(graph, 60)
    whole = dom_hits(graph, paths, iterations=60, segmented=False)
    assert np.allclose(whole.authority, plain.authority, atol=1e-6)
    assert whole.regions == whole.hub_pages == 4 and whole.split_pages == 0


def test_mixed_hub_passes_less_authority_to_its_unrelated_region():
    graph, paths = mixed_graph()
    index = {node: i for i, node in enumerate(graph.ids)}
    junk = [index[n] for n in JUNK]
    good = [index[n] for n in GOOD]
    plain = hits(graph)
    dom = dom_hits(graph, paths)
    assert dom.regions > dom.hub_pages  # the mixed hub was split
    assert dom.split_pages == 1  # and only it
    assert dom.authority[junk].sum() < 0.5 * plain.authority[junk].sum()
    assert dom.authority[good].sum() >= plain.authority[good].sum()
    assert set(top_authorities(dom.authority, 5)) == set(good)


def test_top_authorities_excludes_and_skips_zero_scores():
    scores = np.array([0.5, 0.0, 0.9, 0.5])
    assert top_authorities(scores, 3) == [2, 0, 3]
    assert top_authorities(scores, 3, exclude=[2]) == [0, 3]


def test_plain_weighting_unsegmented_is_kleinberg_hits_and_counts_links_within_a_host():
    graph, paths = mixed_graph()
    one_host = LinkGraph.build({i: "same.test" for i in graph.ids}, list(zip(*_edges(graph), strict=True)))
    adjacency = one_host.adjacency().toarray()
    a = np.ones(one_host.size)
    for _ in range(200):
        a = adjacency.T @ (adjacency @ a)
        a /= np.linalg.norm(a)
    whole = dom_hits(one_host, paths, iterations=200, segmented=False, weighting="plain")
    assert np.allclose(whole.authority, a, atol=1e-6)
    dom = dom_hits(one_host, paths, weighting="plain")
    index = {node: i for i, node in enumerate(one_host.ids)}
    junk = [index[n] for n in JUNK]
    assert dom.authority[junk].sum() < 0.5 * whole.authority[junk].sum()


def _edges(graph):
    return [graph.ids[s] for s in graph.sources], [graph.ids[t] for t in graph.targets]


def test_a_root_set_start_gives_authority_first_to_what_the_roots_hubs_point_at():
    graph, paths = mixed_graph()
    index = {node: i for i, node in enumerate(graph.ids)}
    roots = [index[n] for n in GOOD[:1]]
    one_step = dom_hits(graph, paths, iterations=1, segmented=False, weighting="plain", roots=roots)
    uniform = dom_hits(graph, paths, iterations=1, segmented=False, weighting="plain")
    junk = [index[n] for n in JUNK]
    assert one_step.authority[junk].sum() < uniform.authority[junk].sum()
    with_roots = dom_hits(graph, paths, weighting="plain", roots=roots)
    assert set(top_authorities(with_roots.authority, 5)) == {index[n] for n in GOOD}
