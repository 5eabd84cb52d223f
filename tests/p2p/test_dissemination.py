"""The pull rule of model dissemination: whom a fetcher asks, in which order, and a holder's upload cap."""

from __future__ import annotations

from p2p.dissemination import UploadCap, ask_order


def test_mesh_neighbours_are_asked_before_other_neighbours():
    mesh, neighbours = {"m1", "m2", "m3"}, {"m1", "m2", "m3", "c1", "c2"}
    for _ in range(20):
        order = ask_order(mesh, neighbours, "origin", dial_origin=False)
        assert set(order[:3]) == mesh
        assert set(order[3:]) == {"c1", "c2"}


def test_a_mesh_peer_that_is_no_longer_a_neighbour_is_not_asked():
    order = ask_order({"m1", "gone"}, {"m1", "c1"}, "origin", dial_origin=False)
    assert sorted(order) == ["c1", "m1"]


def test_an_unconnected_origin_is_asked_only_after_patience_and_last():
    neighbours = {"a", "b"}
    assert "origin" not in ask_order(neighbours, neighbours, "origin", dial_origin=False)
    order = ask_order(neighbours, neighbours, "origin", dial_origin=True)
    assert order[-1] == "origin" and len(order) == 3


def test_the_origin_is_asked_at_once_when_nobody_else_can_be():
    assert ask_order(set(), set(), "origin", dial_origin=False) == ["origin"]


def test_a_connected_origin_is_asked_first_and_once():
    for dial_origin in (False, True):
        order = ask_order({"origin", "a"}, {"origin", "a", "b"}, "origin", dial_origin=dial_origin)
        assert order[0] == "origin" and sorted(order) == ["a", "b", "origin"]


def test_askers_of_one_round_spread_over_the_neighbours():
    mesh = {f"m{i}" for i in range(6)}
    firsts = {ask_order(mesh, mesh, "origin", dial_origin=False)[0] for _ in range(200)}
    assert firsts == mesh


def test_upload_cap_admits_its_slots_then_refuses_until_the_window_passes():
    now = [0.0]
    cap = UploadCap(2, 10.0, lambda: now[0])
    assert [cap.admit() for _ in range(3)] == [True, True, False]
    now[0] = 5.0
    assert not cap.admit()
    now[0] = 10.0
    assert cap.admit() and cap.admit() and not cap.admit()
