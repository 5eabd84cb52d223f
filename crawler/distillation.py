"""DOM-aware topic distillation (DOMHITS, seed 003 and Chakrabarti's *Mining the Web* 7.4): hub pages are
split into coherent DOM regions, so authority flows only through the regions that point to good pages.

Plain HITS gives every link of a page the page's whole hub score, so one good list on a mixed page (a
portal with a section on the topic and banners, navigation and unrelated lists around it) lends its weight
to every other link there: topic drift. Here each link is a *microhub* whose score is the authority of its
target; per hub page the microhubs hang from a tree of DOM regions, and a minimum-description-length cut
(the *frontier*) across that tree picks the simplest segmentation that explains the scores: a region whose
links are uniformly good or uniformly poor stays whole, a mixed one is split. Every microhub then takes the
summed score of its frontier region (the plain HITS step, region by region), and authority is gathered
from those smoothed microhub scores.

Choices the seeds leave open (research notes 2.4):
- **Regions** come from the links' element paths in document order (`links.dom_path` as stored): the
  region of depth k around a link is the run of consecutive links sharing its first k tags, so two lists
  separated by other links are two regions even when their tag paths are equal. Chains with one child are
  collapsed.
- **The score model** Theta of a region is Bernoulli: a microhub is *good* when its target's authority is at
  least the mean authority of all microhub targets (the seed's "disproportionately large fraction of
  outlinks compared with the global average point to good authorities"). Data cost: the region's labels
  under the Krichevsky-Trofimov estimate of its own rate; model cost 1 + log2(n)/2 bits for the node and
  its parameter. A region is kept whole when that costs no more than the best segmentation of its
  children; the tree is small, so the cut is found exactly bottom-up rather than greedily.
- Edge weights are Bharat-Henzinger's (`crawler.linkanalysis.bharat_henzinger_weights`) and scores start
  from the project's HITS (`crawler.linkanalysis.hits`): with every page kept whole, DOMHITS is exactly
  that HITS. Bharat-Henzinger weights ignore links within a host, which leaves nothing to rank inside one
  large site (a simulated web serves each site from one host), so `weighting="plain"` gives every link
  weight 1 and starts from uniform scores: Kleinberg's HITS when every page is kept whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from crawler.linkanalysis import HITS_ITERATIONS, LinkGraph, bharat_henzinger_weights, hits

REGION_NODE_BITS = 1.0  # cost of one more frontier node, besides its parameter
WEIGHTINGS = ("bharat-henzinger", "plain")


@dataclass(frozen=True)
class DistillationScores:
    """`authority` and `hub` per graph node (hub: the page's best region), and how many frontier regions
    were kept whole over all hub pages at the last iteration (`regions`) against plain HITS's one per page,
    and how many pages were split (`split_pages`)."""

    authority: np.ndarray
    hub: np.ndarray
    regions: int
    hub_pages: int
    split_pages: int = 0  # hub pages cut into more than one region at the last iteration


def _tags(path: str) -> tuple[str, ...]:
    return tuple(t for t in path.split("/") if t)


def region_tree(
    paths: Sequence[tuple[str, ...]], depth: int = 0, leaves: Sequence[int] | None = None
) -> list:
    """The region tree over microhubs 0..n-1 with element paths `paths` (document order): a node is a list
    of children, a leaf is a microhub index. Children of a node are the runs of consecutive microhubs that
    share the next tag; microhubs whose path ends here are children of their own."""
    indices = list(range(len(paths))) if leaves is None else list(leaves)
    while True:
        runs: list[list[int]] = []
        keys: list[str | None] = []
        for i in indices:
            key = paths[i][depth] if len(paths[i]) > depth else None
            if runs and key is not None and keys[-1] == key:
                runs[-1].append(i)
            else:
                runs.append([i])
                keys.append(key)
        if len(runs) == 1 and keys[0] is not None and len(indices) > 1:
            depth += 1  # a chain: one region with a single child region
            continue
        break
    children: list = []
    for run, key in zip(runs, keys, strict=True):
        if key is None or len(run) == 1:
            children.extend(run)
        else:
            children.append(region_tree(paths, depth + 1, run))
    return children


def _leaves(node: list | int) -> list[int]:
    if isinstance(node, int):
        return [node]
    return [leaf for child in node for leaf in _leaves(child)]


def region_cost(good: int, n: int) -> float:
    """Bits to describe a region of n microhubs, `good` of them good, with its own Bernoulli rate."""
    if n == 0:
        return 0.0
    data = math.lgamma(good + 0.5) + math.lgamma(n - good + 0.5) - math.lgamma(n + 1.0) - math.log(math.pi)
    return REGION_NODE_BITS + 0.5 * math.log2(n) - data / math.log(2.0)


def segment(tree: list, good: np.ndarray) -> list[list[int]]:
    """The minimum-description-length frontier of `tree` for the good/poor labels of its microhubs."""
    return _segment(tree, good)[1]


def _segment(node: list | int, good: np.ndarray) -> tuple[float, list[list[int]]]:
    leaves = _leaves(node)
    whole = region_cost(int(good[leaves].sum()), len(leaves))
    if isinstance(node, int) or len(leaves) == 1:
        return whole, [leaves]
    parts = [_segment(child, good) for child in node]
    split = sum(cost for cost, _ in parts)
    if whole <= split:
        return whole, [leaves]
    return split, [region for _, regions in parts for region in regions]


@dataclass(frozen=True)
class _Microhubs:
    """The deduplicated links of the graph grouped by source page, with their region trees."""

    pages: tuple[int, ...]
    starts: np.ndarray  # microhubs of pages[k] are starts[k]:starts[k+1]
    targets: np.ndarray
    auth_weight: np.ndarray
    hub_weight: np.ndarray
    trees: tuple[list, ...]


def _microhubs(
    graph: LinkGraph, paths: Mapping[int, Sequence[tuple[int, str]]], weighting: str
) -> _Microhubs:
    if weighting == "plain":
        auth_w = hub_w = np.ones(graph.sources.size)
    else:
        auth_w, hub_w = bharat_henzinger_weights(graph)
    edge = {(int(s), int(t)): k for k, (s, t) in enumerate(zip(graph.sources, graph.targets, strict=True))}
    index = {node: i for i, node in enumerate(graph.ids)}
    pages, starts, targets, aw, hw, trees = [], [0], [], [], [], []
    for node_id, links in paths.items():
        source = index.get(node_id)
        if source is None:
            continue
        seen: set[int] = set()
        page_paths = []
        for target_id, path in links:
            target = index.get(target_id)
            k = edge.get((source, target)) if target is not None else None
            if k is None or target in seen:
                continue  # unknown target, self-link, or a repeated link (counted once, as HITS does)
            seen.add(target)
            targets.append(target)
            aw.append(auth_w[k])
            hw.append(hub_w[k])
            page_paths.append(_tags(path))
        if page_paths:
            pages.append(source)
            starts.append(len(targets))
            trees.append(region_tree(page_paths))
    return _Microhubs(
        tuple(pages),
        np.array(starts, dtype=np.int64),
        np.array(targets, dtype=np.int64),
        np.array(aw),
        np.array(hw),
        tuple(trees),
    )


def dom_hits(
    graph: LinkGraph,
    paths: Mapping[int, Sequence[tuple[int, str]]],
    iterations: int = HITS_ITERATIONS,
    segmented: bool = True,
    weighting: str = "bharat-henzinger",
    roots: Sequence[int] = (),
) -> DistillationScores:
    """DOMHITS over `graph`; `paths[node id]` lists a page's links as (target node id, element path) in
    document order. Links missing from `paths` do not count. `segmented=False` keeps every page whole:
    HITS over the same links with the chosen `weighting` (see the module docstring). With `roots` (graph
    indices of the root set), only they start with authority, as in the book's DOMHITS (Fig. 7.13): the
    first segmentation then separates regions linking to the root set from the rest."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, not {weighting!r}")
    n = graph.size
    if n == 0:
        return DistillationScores(np.zeros(0), np.zeros(0), 0, 0)
    hubs = _microhubs(graph, paths, weighting)
    if len(roots):
        authority = np.zeros(n)
        authority[np.asarray(roots, dtype=np.int64)] = 1.0 / math.sqrt(len(roots))
    elif weighting == "plain":
        authority = np.full(n, 1.0 / math.sqrt(n))
    else:
        authority = hits(graph, iterations).authority.copy()
    page_hub = np.zeros(n)
    regions, split = len(hubs.pages), 0
    for _ in range(iterations):
        score = authority[hubs.targets] * hubs.hub_weight
        good = authority[hubs.targets] >= authority[hubs.targets].mean() if score.size else score > 0
        smoothed = np.zeros_like(score)
        page_hub[:] = 0.0
        regions = split = 0
        for k, page in enumerate(hubs.pages):
            lo, hi = hubs.starts[k], hubs.starts[k + 1]
            cut = segment(hubs.trees[k], good[lo:hi]) if segmented else [list(range(hi - lo))]
            regions += len(cut)
            split += len(cut) > 1
            for region in cut:
                members = np.asarray(region) + lo
                total = float(score[members].sum())
                smoothed[members] = total
                page_hub[page] = max(page_hub[page], total)
        new = np.bincount(hubs.targets, weights=smoothed * hubs.auth_weight, minlength=n)
        norm = float(np.linalg.norm(new))
        if norm == 0.0:
            break
        authority = new / norm
    norm = float(np.linalg.norm(page_hub))
    return DistillationScores(
        authority, page_hub / norm if norm else page_hub, regions, len(hubs.pages), split
    )


def top_authorities(scores: np.ndarray, k: int, exclude: Sequence[int] = ()) -> list[int]:
    """Indices of the k highest scores (ties: lower index first), `exclude`d indices left out."""
    skip = set(exclude)
    order = np.lexsort((np.arange(scores.size), -scores))
    return [int(i) for i in order if int(i) not in skip and scores[i] > 0][:k]
