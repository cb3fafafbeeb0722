"""N5 (review 2026-12-02): runners on several machines sharing one PostgreSQL store ran the same
experiment at once (the lock was a file on each machine): 9 of 10 runs ran twice. The lock of a
shared store is a lease row in the store, with a heartbeat, taken over once its runner is gone."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from support.timing import wait_for

from kubebench.errors import BusyError, LeaseLost
from kubebench.locks import LOCK_FILE, ExperimentLock
from kubebench.plan.plan import make_plan
from kubebench.settings import Settings
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.holding import StoreLease, hold_experiment, runner_alive
from kubebench.store.records import ExperimentRecord
from kubebench.store.store import open_store

EXP = "shared-exp"


def begin(store, exp_id: str):
    spec = BenchmarkSpec.model_validate({"name": "s", "job": {"command": ["true"]}, "parameters": {"bs": [1, 2]}})
    plan = make_plan(spec, exp_id, "f1")
    now = time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name="s", backend="local", source="s.yaml", spec_text="name: s",
                                            job_fingerprint="f1", created_at=now, updated_at=now), plan)
    return plan


@pytest.fixture
def two_stores(postgres_url: str):
    """Two runners' handles on one PostgreSQL database (two engines, as on two machines)."""
    a, b = open_store(postgres_url), open_store(postgres_url)
    yield a, b
    a.engine.dispose()
    b.engine.dispose()


def test_a_second_runner_is_refused_while_the_first_holds_the_lease(two_stores, tmp_path: Path) -> None:
    a, b = two_stores
    with hold_experiment(a, tmp_path / "home-a" / EXP, EXP):
        with pytest.raises(BusyError, match=rf"being run by another kubebench runner \(host \S+, pid {os.getpid()}"):
            with hold_experiment(b, tmp_path / "home-b" / EXP, EXP):
                pass
        assert runner_alive(b, Settings(tmp_path / "home-b", ""), EXP)
    assert b.lease(EXP) is None and not runner_alive(b, Settings(tmp_path / "home-b", ""), EXP)
    with hold_experiment(b, tmp_path / "home-b" / EXP, EXP):  # free once A let go
        assert b.lease(EXP) is not None


def test_an_expired_lease_is_taken_over_and_its_old_holder_writes_nothing(two_stores) -> None:
    a, b = two_stores
    plan = begin(a, EXP)  # before the lease: A's writes are fenced once it holds one
    assert a.acquire_lease(EXP, "a" * 32, "host-a", 1, ttl=0.05) == (True, None)  # no heartbeat: A "died"
    wait_for(lambda: not a.lease(EXP).alive, 10, "A's lease to expire")
    taken, previous = b.acquire_lease(EXP, "b" * 32, "host-b", 2, ttl=30)
    assert taken and previous is not None and (previous.host, previous.pid) == ("host-a", 1)
    run = plan.runs[0].id
    with pytest.raises(LeaseLost, match="taken over by host host-b, pid 2"):
        a.start_run(run, "/a/" + run)  # A woke up: fenced, the row stays B's to write
    b.start_run(run, "/b/" + run)
    assert b.run(run).path == "/b/" + run


def test_a_live_lease_is_not_taken_over(two_stores) -> None:
    a, b = two_stores
    assert a.acquire_lease(EXP, "a" * 32, "host-a", 1, ttl=30)[0]
    taken, holder = b.acquire_lease(EXP, "b" * 32, "host-b", 2, ttl=30)
    assert not taken and holder is not None and holder.owner == "a" * 32 and holder.alive


def test_the_lease_of_a_runner_that_held_this_lock_file_is_taken_over_at_once(two_stores, tmp_path: Path) -> None:
    """A runner killed on this machine left its lease (30 s to live) and its lock file: the next runner of
    the same folder gets the lock file, so the lease's runner is gone, and it need not wait."""
    a, b = two_stores
    folder = tmp_path / EXP
    folder.mkdir()
    assert a.acquire_lease(EXP, "d" * 32, "here", 99999, ttl=30)[0]
    (folder / LOCK_FILE).write_text(f"99999 {'d' * 32}\n")  # what the dead runner's lock file says
    with hold_experiment(b, folder, EXP):
        assert b.lease(EXP).owner != "d" * 32
    (folder / LOCK_FILE).write_text(f"99999 {'e' * 32}\n")
    assert a.acquire_lease(EXP, "f" * 32, "elsewhere", 5, ttl=30)[0]  # another runner's lease, alive
    with pytest.raises(BusyError, match="host elsewhere, pid 5"):
        with hold_experiment(b, folder, EXP):
            pass


def test_the_heartbeat_keeps_the_lease_and_a_lost_lease_stops_the_runner(two_stores) -> None:
    a, b = two_stores
    lost = threading.Event()
    with pytest.raises(LeaseLost, match="taken over by another runner"):
        with StoreLease(a, EXP, "a" * 32, on_lost=lost.set, ttl=0.6):
            first = a.lease(EXP)
            wait_for(lambda: a.lease(EXP).heartbeat_at > first.heartbeat_at, 20, "a heartbeat")
            assert b.acquire_lease(EXP, "b" * 32, "host-b", 2, ttl=30, dead_owner="a" * 32)[0]
            wait_for(lost.is_set, 20, "A to see its lease lost")
    assert b.lease(EXP).owner == "b" * 32  # A's release did not remove B's lease


def test_a_sqlite_store_keeps_the_file_lock_and_no_lease(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    settings = Settings(tmp_path, "")
    assert not store.shared and not runner_alive(store, settings, EXP)
    with hold_experiment(store, settings.experiments_root / EXP, EXP):
        assert store.lease(EXP) is None
        assert runner_alive(store, settings, EXP)  # the lock file is held (by this process)
        with pytest.raises(BusyError, match="another kubebench process"):
            with ExperimentLock(settings.experiments_root / EXP, EXP):
                pass
    assert not runner_alive(store, settings, EXP)
    store.engine.dispose()


@pytest.mark.slow
def test_two_runner_processes_on_one_postgresql_server(postgres_url: str, tmp_path: Path) -> None:
    """Two `kubebench run` processes with two homes: B is refused while A runs; A is killed with its
    jobs; B takes the lease over and ends the experiment; each run executed once (A's last redone)."""
    from kubebench.testing.shared_store import check

    outcome = check(postgres_url, tmp_path)
    assert outcome.problems == []
    assert "host" in outcome.refused and outcome.took_over and outcome.killed_run
    assert outcome.statuses == {"succeeded": 6} and sum(outcome.ends.values()) == 6
