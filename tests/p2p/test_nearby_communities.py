"""The communities connected peers are in and the node is not: what a user sees to find a community whose
key differs from their folder's name, bounded against a peer subscribing to made-up keys."""

from types import SimpleNamespace

from p2p.communities import GOSSIP_PREFIX, MAX_NEARBY, Communities
from p2p.settings import P2PSettings

ME, ALICE, BOB, MALLORY = "12D3KooWMe", "12D3KooWAlice", "12D3KooWBob", "12D3KooWMallory"


def communities(peer_topics: dict[str, set[str]], held: tuple[str, ...] = ()) -> Communities:
    pubsub = SimpleNamespace(
        peer_topics={GOSSIP_PREFIX + k if k else "other": v for k, v in peer_topics.items()}
    )
    p2p = SimpleNamespace(settings=P2PSettings(), pubsub=pubsub, peer_id=ME)
    found = Communities(p2p, guard=None)
    found._subscriptions.update({key: object() for key in held})
    return found


def test_the_communities_of_connected_peers_that_the_node_is_not_in_largest_first():
    nearby = communities(
        {"Databases": {ALICE, BOB}, "Science/Mathematics": {BOB, ALICE, ME}, "Sysadmin": {ALICE}},
        held=("Databases",),
    ).nearby()
    assert nearby == {"Science/Mathematics": [ALICE, BOB], "Sysadmin": [ALICE]}


def test_made_up_keys_are_bounded_and_keys_no_announcement_could_carry_are_not_shown():
    made_up = {f"spam {i:03d}": {MALLORY} for i in range(200)}
    nearby = communities(
        {**made_up, "Databases": {ALICE, BOB}, "\x1b[2J clear": {MALLORY}, "x" * 129: {MALLORY}, "": {ALICE}}
    ).nearby()
    assert len(nearby) == MAX_NEARBY
    assert next(iter(nearby)) == "Databases"  # the most peers first
    assert all(key.startswith("spam") for key in list(nearby)[1:])
