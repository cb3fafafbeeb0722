"""The phases of a timeline: which reading of a moment counts, the slowest replica, phases that
follow one another without gaps (clamped, never negative), and the workload's window."""

from __future__ import annotations

import pytest

from kubebench.timeline import Boundary, best, chosen, edges, phases, workload_window


def b(name: str, t: float, source: str = "observed", precision: float = 1e-6, replica: str = "", origin: str = ""):
    return Boundary(name, t, source, precision, replica, origin)  # type: ignore[arg-type]


def test_a_fine_server_time_beats_an_observation_which_beats_a_whole_second() -> None:
    coarse, seen, event = b("scheduled", 10.0, "server", 1.0), b("scheduled", 10.7), b("scheduled", 10.6, "server", 1e-6)
    assert best([coarse, seen, event]) is event
    assert best([coarse, seen]) is seen
    assert best([coarse]) is coarse
    assert best([b("first_step", 5.0, "workload"), seen]).source == "workload"
    with pytest.raises(ValueError):
        best([])


def test_a_moment_of_several_replicas_is_reached_by_the_last_one() -> None:
    timeline = [b("submitted", 0.0), b("started", 1.0, replica="master-0"), b("started", 1.5, replica="worker-0"),
                b("last_step", 4.0, "workload", replica="master-0"), b("last_step", 4.2, "workload", replica="worker-0")]
    assert edges(timeline) == [("submitted", 0.0), ("started", 1.5), ("last_step", 4.2)]
    found = phases(timeline)
    assert found["container_start_seconds"] == 1.5  # no admission, scheduling or pull: submit → start
    assert found["train_seconds"] == pytest.approx(2.7)
    assert found["end_to_end_seconds"] == pytest.approx(4.2)
    assert found["startup_seconds"] == 1.5
    assert found["overhead_fraction"] == pytest.approx(1.5 / 4.2, abs=1e-6)


def test_phases_add_up_and_a_moment_seen_too_early_makes_a_phase_of_zero() -> None:
    timeline = [b("submitted", 100.0), b("admitted", 102.0), b("created", 101.0, "server", 1.0, "worker-0"),
                b("scheduled", 102.5, replica="worker-0"), b("pulled", 104.0, "server", 1e-9, "worker-0"),
                b("started", 104.5, replica="worker-0"), b("first_step", 106.0, "workload", replica="worker-0"),
                b("last_step", 110.0, "workload", replica="worker-0"), b("exited", 110.2, replica="worker-0"),
                b("collected", 110.3), b("deleted", 110.4)]
    found = phases(timeline)
    assert found["queue_seconds"] == 2.0
    assert found["operator_seconds"] == 0.0  # a whole-second creationTimestamp before the admission
    assert found["scheduling_seconds"] == 0.5
    assert found["init_seconds"] == 1.5 and found["train_seconds"] == 4.0
    chain = ("queue", "operator", "scheduling", "image_pull", "container_start", "init", "train", "shutdown",
             "collect", "teardown")
    assert sum(found[f"{k}_seconds"] for k in chain) == pytest.approx(found["end_to_end_seconds"]) == 10.4
    assert all(found[f"{k}_seconds"] >= 0 for k in chain)


def test_no_submit_no_phases_and_a_gang_wait_beside_them() -> None:
    assert phases([b("started", 1.0)]) == {} and edges([]) == []
    found = phases([b("submitted", 0.0), b("gang_created", 1.0, "server", 1.0), b("gang_ready", 3.5),
                    b("started", 4.0, replica="worker-0")])
    assert found["gang_wait_seconds"] == 2.5 and "overhead_fraction" not in found


def test_the_workload_ran_from_its_first_start_to_its_last_exit() -> None:
    timeline = [b("submitted", 0.0), b("started", 5.0, replica="worker-0"), b("started", 5.5, replica="worker-1"),
                b("exited", 9.0, replica="worker-0"), b("exited", 9.4, replica="worker-1")]
    assert workload_window(timeline) == (5.0, 9.4)
    marks = [b("imports_done", 2.0, "workload", replica="w"), b("last_step", 3.0, "workload", replica="w")]
    assert workload_window(marks) == (2.0, 3.0)  # without process times: its first and last marks
    assert workload_window([b("submitted", 0.0)]) is None
    assert workload_window([b("started", 5.0), b("exited", 5.0)]) is None


def test_a_boundary_as_data_and_back() -> None:
    one = b("pulled", 12.5, "server", 1e-9, "master-0", "Pulled event name")
    assert Boundary.of(one.as_dict()) == one
    assert Boundary.of({"name": "x", "t": 1, "source": "elsewhere"}).source == "observed"
    assert chosen([one, b("pulled", 13.0, replica="master-0")])[("pulled", "master-0")] is one


def test_the_longest_wait_at_the_rendezvous_is_beside_the_phases() -> None:
    timeline = [b("submitted", 0.0), b("imports_done", 2.0, "workload", replica="master-0"),
                b("imports_done", 3.5, "workload", replica="worker-0"),
                b("rendezvous_done", 3.6, "workload", replica="master-0"),
                b("rendezvous_done", 3.6, "workload", replica="worker-0")]
    found = phases(timeline)
    assert found["rendezvous_seconds"] == pytest.approx(0.1)  # the slowest rank's handshake
    assert found["rendezvous_wait_seconds"] == pytest.approx(1.6)  # what the first rank lost to it
