"""`--cluster`: the same work on a real Dask distributed cluster (its local cluster, 2 worker
processes, started in a process of its own: dask_peers.py) gives every row of the local run,
with file names as the client sees them although the workers compile their own copy of the
project's source text."""
from __future__ import annotations

from pathlib import Path

import distributed        # the `test` extra installs it: these run in `make test`
import pytest

from astral_dsl.explore import sweep
from astral_dsl.explore.engines import LocalEngine

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    from tests.explore.dask_peers import Peer

    c = Peer("cluster", "2")
    c.scheduler_address = c.address
    try:
        yield c
    finally:
        c.close()


def test_workers_run_this_checkout(cluster):
    with distributed.Client(cluster.scheduler_address) as client:
        files = client.run(lambda: __import__("astral_dsl").__file__)
    assert len(files) == 2
    assert all(Path(f).resolve().is_relative_to(REPO) for f in files.values())


def test_sweep_rows_equal_the_local_run(cluster, project):
    grids = ["hosts_per_rack=1..6", "rack_limit=40kW,50kW"]
    remote = sweep.run(str(project), grids, job="train", cluster=cluster.scheduler_address)
    local = sweep.run(str(project), grids, job="train", engine=LocalEngine(1))
    assert remote.engine.endswith("(2 workers)")
    assert len(remote.rows) == 12
    for a, b in zip(remote.rows, local.rows):
        assert a == b
    files = {d["file"] for r in remote.rows for d in r["diagnostics"]}
    assert files == {str(project)}       # the client's name, not the worker's copy


def test_search_ranks_on_the_cluster_as_locally(cluster, project):
    from astral_dsl.explore import search

    remote = search.run(str(project), top=5, cluster=cluster.scheduler_address)
    local = search.run(str(project), top=5, engine=LocalEngine(1))
    assert remote.engine.endswith("(2 workers)")
    assert len(remote.rows) == 5
    assert remote.rows == local.rows                 # configurations, forecasts, breakdowns
    assert (remote.memory_checked, remote.fit) == (local.memory_checked, local.fit)


def test_a_workers_address_is_refused(cluster, project):
    # the worker's port for the scheduler's: an E000 with the bytes of a pickle, exit 0, then
    # a traceback from Client.__del__ 20 s later
    from clirun import astral

    with distributed.Client(cluster.scheduler_address) as client:
        worker = sorted(client.scheduler_info()["workers"])[0]
    out = astral("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster", worker)
    assert out.returncode == 2, out.stderr
    assert out.stderr == ""
    assert out.stdout.startswith(f"error[E801]: --cluster {worker}: a Dask Worker answered "
                                 "there, not a Dask scheduler; give the scheduler's address "
                                 "(the one its workers connect to, 8786 by default)\n"), \
        out.stdout


def test_an_answer_of_the_wrong_shape_costs_its_points(cluster, project, monkeypatch):
    # a worker that answers a chunk of 3 points with no rows (plain data, but not the rows):
    # the sweep printed `"valid": true, "rows": []` and exited 0; the search ranked nothing
    # and said nothing was lost
    from astral_dsl.explore import search
    from tests.explore.dask_peers import no_answer

    monkeypatch.setattr(sweep, "evaluate_points", no_answer)
    result = sweep.run(str(project), ["hosts_per_rack=1..3"], cluster=cluster.scheduler_address)
    assert [r["params"]["hosts_per_rack"] for r in result.rows] == ["1", "2", "3"]
    for row in result.rows:
        assert not row["valid"] and [d["code"] for d in row["diagnostics"]] == ["E800"]
        assert "not what its task returns" in row["diagnostics"][0]["message"]
    monkeypatch.setattr(search, "screen", no_answer)
    found = search.run(str(project), top=5, cluster=cluster.scheduler_address)
    assert found.rows == []
    lost = [d for d in found.diagnostics if d.code == "E800"]
    assert len(lost) == 1 and "not what its task returns" in lost[0].message
