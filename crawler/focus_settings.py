"""The focus loop's settings, apart from `crawler.focus` so that reading them (the node's `[focus]` config
section, every CLI command) does not import the topic models and scikit-learn.

The node's `config.toml` overrides these under `[focus]`; `crawler.focus` re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.settings import doc as setting

STRATEGIES = ("bfs", "dfs", "classifier", "classifier_bfs", "classifier_dfs", "bookmark")


@dataclass(frozen=True)
class FocusSettings:
    strategy: str = setting(
        "classifier_bfs", f"Link priority strategy (thesis 2.7): {', '.join(STRATEGIES)}."
    )
    tunnel_depth: int = setting(
        2, "Hops followed through rejected pages before a path is given up (0: none)."
    )
    tunnel_decay: float = setting(0.5, "Priority factor per tunnelled hop (exponential decay, thesis 2.8).")
    # A person's node starts from a handful of bookmarks per topic: too few for a model, and too few for
    # peers to measure each other's models (thesis 3.15 needs labelled documents a model was not trained
    # on). A short learning phase on the bookmarks' own hosts (thesis 2.10; well under a minute of
    # crawling) ends in the first re-organisation, whose archetypes (for a sparse topic, the most
    # confident pages accepted in the phase) become training documents; retraining every 250 pages keeps
    # adding them while the crawl is young and costs little (HITS over the crawled pages). The thesis
    # takes every accepted page; where a bookmark's host holds many kinds of page (a university's), a
    # two-bookmark model accepts most of them: a WebKB node took 130-213 course archetypes, 19-28% course
    # pages, where its 25 most confident were 32-76%.
    learning_pages: int = setting(
        100,
        "Pages of the learning phase (sharp focus, seed hosts only) before harvesting; 0: harvest at once.",
    )
    retrain: bool = setting(True, "Retrain the topic model with archetypes picked by link analysis.")
    retrain_every: int = setting(250, "Pages between two re-organisations (link analysis, retraining, hubs).")
    n_auth: int = setting(25, "Top authorities per topic considered as archetypes at each re-organisation.")
    n_conf: int = setting(
        25,
        "Top-confidence pages per topic considered as archetypes (with sparse bookmarks: taken at the "
        "phase switch).",
    )
    n_hub: int = setting(5, "Best hubs per topic whose pending links move to the front of the queue.")
    max_archetypes: int = setting(300, "Most archetypes kept per topic.")
    reconsider: bool = setting(
        True,
        "After retraining, classify the rejected pages again and follow the links of those accepted now.",
    )
    sparse_seeds: int = setting(
        5,
        "A topic with at most this many bookmarks takes its n_conf most confident pages accepted in the "
        "learning phase as archetypes at the phase switch, without the seeds' tests (the thesis's rule "
        "for 2-3 seeds, 2.10, which takes them all); 0: never.",
    )
    judge_feed_entries: bool = setting(
        True,
        "Classify a feed's entries by their words (title and summary) and queue those the topic model "
        "accepts as links of accepted pages of that confidence; off, every entry is tunnelled.",
    )
    threshold: float = setting(0.0, "Normalised confidence a page needs to enter a topic (0: plain SVM).")
    # A topic's SVM learns its two or three bookmarks against every sibling's and the OTHERS folders'
    # documents; trained as they come, its bias rejects nearly every page unlike its bookmarks: on 10
    # devweb nodes the first model (bookmarks only) took 0.6-2.5% of its topics' crawled pages, balanced
    # 8-48% (precision 0.93-1.00 against 1.00). Community runs (4 nodes, session 35): nodes alone 0.94 ->
    # 0.99 with the nested devweb bookmarks, 0.971 -> 0.978 and 0.948 -> 0.958 with the flat ones, but
    # 0.906 -> 0.862 on WebKB, where a topic is a small share of its bookmarks' hosts and every page
    # accepted there more is mostly another kind. Off by default: on where a topic's bookmarks are few
    # and unlike each other, on hosts that hold little else.
    balanced_classes: bool = setting(
        False,
        "Weigh a topic's bookmarks and its competitors' documents equally in each topic's SVM (helps "
        "topics of few, unlike bookmarks on hosts of little else; hurts where a topic is a small part of "
        "its bookmarks' hosts).",
    )
    min_topic_features: int = setting(
        3, "N_w: features of a node a page must hold to be classified below it."
    )
    language: str = setting("english", "The crawl's language for the stopword check; '' turns it off.")
    min_language_score: int = setting(2, "d_STOP: own-language minus foreign stopwords a page needs.")

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {self.strategy!r}")
        if not 0.0 < self.tunnel_decay <= 1.0 or self.tunnel_depth < 0 or self.retrain_every < 1:
            raise ValueError("tunnel_decay must be in (0, 1], tunnel_depth >= 0 and retrain_every >= 1")
