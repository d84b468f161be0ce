"""`--cluster`: whom the client trusts and what it accepts. Plain TCP only to this machine
unless --insecure-cluster, an address without a protocol refused, TLS with the cluster's
certificates; a rogue worker that joins a cluster the client did not authenticate cannot run
code in the client (its pickled answer to the version probe is refused, whether Dask's
serializers carry it or the scheduler forwards it as an already pickled object); a TLS cluster
runs a sweep, and refuses a client without the cluster's certificates."""
from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from astral_dsl.explore import unpickle
from astral_dsl.explore.cluster import ClusterError, ClusterSpec, connection, loopback
from astral_dsl.explore.engines import EngineError, engine

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from tests.explore.dask_peers import Payload, Peer, certificates, wait_for_workers  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _cli(*args, timeout=300):
    """`astral ARGS` as a process of its own (what an engineer runs)."""
    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


def _cli_here(*args):
    """`astral ARGS` in this process (tests/clirun.py): the command's own code path, without a
    new interpreter that imports Distributed again (about a second of CPU each)."""
    from clirun import astral

    return astral(*args)


# ---- addresses ------------------------------------------------------------------------------
@pytest.mark.parametrize("host,expected", [
    ("localhost", True), ("127.0.0.1", True), ("127.3.2.1", True), ("::1", True),
    ("10.0.0.5", False), ("scheduler.example", False), ("0.0.0.0", False), ("::", False)])
def test_loopback(host, expected):
    assert loopback(host) is expected


def test_plain_tcp_only_to_this_machine():
    assert connection(ClusterSpec("tcp://127.0.0.1:8786")) == ("tcp://127.0.0.1:8786", None)
    assert connection(ClusterSpec("tcp://[::1]:8786"))[1] is None
    assert connection(ClusterSpec("tcp://localhost:8786"))[1] is None
    with pytest.raises(ClusterError, match="--insecure-cluster"):
        connection(ClusterSpec("tcp://10.1.2.3:8786"))
    with pytest.raises(ClusterError, match="--insecure-cluster"):
        connection(ClusterSpec("ws://scheduler.example:8786"))
    assert connection(ClusterSpec("tcp://10.1.2.3:8786", insecure=True)) == \
        ("tcp://10.1.2.3:8786", None)


def test_an_address_without_protocol_is_refused_not_taken_as_tcp():
    with pytest.raises(ClusterError, match="name the protocol: tls://10.1.2.3:8786"):
        connection(ClusterSpec("10.1.2.3:8786"))
    with pytest.raises(ClusterError, match="name the protocol"):
        connection(ClusterSpec("localhost:8786", insecure=True))
    for bad in ("ucx://10.1.2.3:8786", "tcp://:8786", "tcp://10.1.2.3:99999"):
        with pytest.raises(ClusterError):
            connection(ClusterSpec(bad, insecure=True))


def test_tls_needs_certificates(tmp_path, monkeypatch):
    import dask

    with dask.config.set({"distributed.comm.tls.ca-file": None,
                          "distributed.comm.tls.client.cert": None}):
        with pytest.raises(ClusterError, match="--tls-ca-file"):
            connection(ClusterSpec("tls://10.1.2.3:8786"))
    with pytest.raises(ClusterError, match="no such file"):
        connection(ClusterSpec("tls://10.1.2.3:8786", ca_file=str(tmp_path / "none.pem"),
                               cert=str(tmp_path / "none.pem")))
    with pytest.raises(ClusterError, match="need tls://"):
        connection(ClusterSpec("tcp://127.0.0.1:8786", ca_file=str(tmp_path / "x")))
    ca, cert, key = certificates(tmp_path)
    address, sec = connection(ClusterSpec("tls://10.1.2.3:8786", ca, cert, key))
    assert address == "tls://10.1.2.3:8786" and sec.require_encryption
    assert (sec.tls_ca_file, sec.tls_client_cert, sec.tls_client_key) == (ca, cert, key)
    with dask.config.set({"distributed.comm.tls.ca-file": ca,
                          "distributed.comm.tls.client.cert": cert,
                          "distributed.comm.tls.client.key": key}):
        assert connection(ClusterSpec("tls://10.1.2.3:8786"))[1].tls_client_cert == cert


def test_a_bad_certificate_file_is_named(tmp_path):
    # each used to read "cannot reach the Dask scheduler ([SSL] PEM lib (_ssl.c:3905))"
    from cryptography.hazmat.primitives import serialization

    ca, cert, key = certificates(tmp_path)
    (tmp_path / "other").mkdir()
    other = certificates(tmp_path / "other", "other")
    junk = tmp_path / "junk.pem"
    junk.write_text("not PEM\n")
    cases = [((str(junk), cert, key), f"--tls-ca-file {junk}: not a CA certificate in PEM"),
             ((ca, str(junk), key), f"--tls-cert {junk} (key {key}): not a certificate and "
                                    "its matching private key"),
             ((ca, cert, other[2]), "KEY_VALUES_MISMATCH"),
             ((ca, cert, None), f"--tls-cert {cert}: not a certificate and its matching "
                                "private key in PEM"),
             ((str(tmp_path), cert, key), f"--tls-ca-file {tmp_path}: not a file")]
    private = serialization.load_pem_private_key(Path(key).read_bytes(), None)
    locked = tmp_path / "locked.pem"       # an encrypted key: refused, never prompted for
    locked.write_bytes(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    cases.append(((ca, cert, str(locked)), "the private key is encrypted"))
    for (c, t, k), message in cases:
        with pytest.raises(ClusterError, match=re.escape(message)):
            connection(ClusterSpec("tls://10.1.2.3:8786", c, t, k))


def test_an_in_process_scheduler_is_refused(project):
    # the guard is process-wide: an in-process cluster's workers could not read their tasks
    # (the version probe failed with RefusedPickle); from the command line, a 20 s wait and a
    # traceback from Client.__del__
    with pytest.raises(ClusterError, match="processes of its own"):
        connection(ClusterSpec("inproc://192.0.2.2/1/1"))
    out = _cli_here("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster",
                    "inproc://192.0.2.2/1/1")
    assert out.returncode == 2 and "error[E801]: --cluster inproc://" in out.stdout, out.stdout
    assert "tcp://127.0.0.1:PORT" in out.stdout


def test_a_port_where_another_service_answers_is_refused_in_time():
    # an HTTP server on the port given: Dask's Client waited for it forever
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from astral_dsl.explore.engines import DaskEngine

    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    box = {}

    def connect():
        try:
            DaskEngine(ClusterSpec(f"tcp://127.0.0.1:{server.server_address[1]}"), timeout=1)
        except EngineError as exc:
            box["error"] = str(exc)
    try:
        start = time.monotonic()
        attempt = threading.Thread(target=connect, daemon=True)
        attempt.start()
        attempt.join(30)
        assert not attempt.is_alive(), "still waiting after 30 s"
        assert time.monotonic() - start < 10
        assert "cannot reach the Dask scheduler: nothing answered as one within 1 s" in \
            box["error"]
        assert not unpickle.installed()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", ["sweep", "search"])
@pytest.mark.parametrize("address", ["tcp://203.0.113.7:8786", "203.0.113.7:8786"])
def test_cli_refuses_plain_tcp_to_another_machine(project, command, address):
    grid = ["--grid", "hosts_per_rack=1..2"] if command == "sweep" else []
    out = _cli_here(command, str(project), *grid, "--cluster", address)
    assert out.returncode == 2, out.stderr
    assert f"error[E801]: --cluster {address}" in out.stdout and "tls://" in out.stdout
    assert "Traceback" not in out.stderr
    if "://" in address:
        assert "--insecure-cluster" in out.stdout
    # --tls-* options without a cluster, or --insecure-cluster alone, are usage errors too
    out = _cli_here(command, str(project), *grid, "--tls-ca-file", "ca.pem")
    assert out.returncode == 2 and "--cluster" in out.stderr
    # and --workers beside --cluster, which it used to ignore without a word
    out = _cli_here(command, str(project), *grid, "--workers", "4", "--cluster",
                    "tcp://127.0.0.1:9")
    assert out.returncode == 2 and "give one or the other" in out.stderr, out.stderr


# ---- a rogue worker ---------------------------------------------------------------------------
def test_restricted_unpickling_builds_plain_data_and_refuses_names(tmp_path):
    data = {"a": [1, 2.5, None, True, "x", b"y"], "t": (1, (2,)), "s": {1}, "f": frozenset()}
    assert unpickle.loads(pickle.dumps(data)) == data
    assert unpickle.loads(pickle.dumps(list)) is list      # a type, as Dask records one
    prefix = str(tmp_path / "ran-")
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(unpickle.RefusedPickle, match=r"\.exec`"):
            unpickle.loads(pickle.dumps(Payload(prefix), protocol=protocol))
    with pytest.raises(unpickle.RefusedPickle, match="os.system"):
        unpickle.loads(b"cos\nsystem\n(S'true'\ntR.")
    # an allowed name is a value, never called: no bytes(10**12) out of a 30-byte pickle
    with pytest.raises(unpickle.RefusedPickle, match="calls something"):
        unpickle.loads(b"cbuiltins\nbytes\n(L1000000000000L\ntR.")
    with pytest.raises(unpickle.RefusedPickle):     # a task's exception (tblib) is refused too
        unpickle.loads(pickle.dumps(ValueError("v")))
    assert not list(tmp_path.iterdir())


def test_a_result_is_counted_as_a_tree_and_each_object_walked_once(monkeypatch):
    # the memo of a pickle lets one list stand in many places: 40 levels of [x, x] are
    # 250 bytes and 2^41 - 1 values as a tree; the old walk of the tree never ended
    x: list = []
    for _ in range(40):
        x = [x, x]
    data = pickle.dumps(x, protocol=4)
    assert len(data) < 300
    assert unpickle.plain(unpickle.loads(data)) is False
    # counted as the rows' JSON would hold it: [1, 2] is 3 values, [a, a, a] of it 1 + 3 x 3
    a = [1, 2]
    shared = unpickle.loads(pickle.dumps({"rows": [a, a, a]}))   # 1 + (1 + 9) = 11
    monkeypatch.setattr(unpickle, "MAX_NODES", 11)
    assert unpickle.plain(shared) is True
    monkeypatch.setattr(unpickle, "MAX_NODES", 10)
    assert unpickle.plain(shared) is False
    monkeypatch.undo()
    looped: list = [1]
    looped.append(looped)                            # a list that holds itself
    assert unpickle.plain(unpickle.loads(pickle.dumps(looped))) is False
    assert unpickle.plain({"a": [[0] * 3] * 64, 1: (None, "s", b"b", 1.5, True)}) is True
    assert unpickle.plain({(1,): 2}) is False and unpickle.plain({1}) is False


@pytest.fixture(scope="module")
def scheduler():
    s = Peer("scheduler")
    try:
        yield s.address
    finally:
        s.close()


@pytest.mark.parametrize("mode", ["serialized", "forwarded"])
def test_a_rogue_worker_cannot_run_code_in_the_client(scheduler, mode, tmp_path):
    prefix = str(tmp_path / "ran-in-")
    rogue = Peer("rogue", scheduler, mode, prefix)
    try:
        # the payload is real: an unguarded Dask client that asks runs it in its own process
        # (once the rogue has joined: the client waits for it, as wait_for_workers does)
        code = ("import sys, distributed; c = distributed.Client(sys.argv[1], timeout=30); "
                "c.wait_for_workers(1, timeout=60); "
                "print(list(c.run(lambda: 0).values())[0]); c.close()")
        control = subprocess.run([sys.executable, "-c", code, scheduler], capture_output=True,
                                 text=True, timeout=120)
        ran = {p.name for p in tmp_path.iterdir()}
        assert ran, control.stderr[-2000:]
        # the client refuses it: the probe fails, nothing ran here, the guard is undone
        with pytest.raises(EngineError, match="version probe"):
            engine(scheduler)
        assert f"ran-in-{os.getpid()}" not in {p.name for p in tmp_path.iterdir()}
        assert {p.name for p in tmp_path.iterdir()} == ran
        assert not unpickle.installed()
        import distributed.protocol.pickle as dpp

        assert dpp.pickle is pickle
    finally:
        rogue.close()


def test_the_command_line_refuses_a_rogue_worker(scheduler, project, tmp_path):
    prefix = str(tmp_path / "ran-in-")
    rogue = Peer("rogue", scheduler, "serialized", prefix)
    try:
        wait_for_workers(scheduler, 1)
        out = _cli("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster",
                   scheduler)
        assert out.returncode == 2, out.stderr
        assert "error[E801]" in out.stdout and "version probe" in out.stdout
        assert "Traceback" not in out.stderr
        assert not list(tmp_path.glob("ran-in-*"))
    finally:
        rogue.close()


# ---- TLS --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    ca, cert, key = certificates(folder)
    c = Peer("cluster", "2", ca, cert, key)
    try:
        yield c.address, (ca, cert, key), folder
    finally:
        c.close()


def test_a_tls_cluster_runs_a_sweep(tls_cluster, project):
    from astral_dsl.explore import sweep
    from astral_dsl.explore.engines import LocalEngine

    address, (ca, cert, key), _ = tls_cluster
    assert address.startswith("tls://")
    grids = ["hosts_per_rack=1..4", "rack_limit=40kW,50kW"]
    remote = sweep.run(str(project), grids, job="train",
                       cluster=ClusterSpec(address, ca, cert, key))
    local = sweep.run(str(project), grids, job="train", engine=LocalEngine(1))
    assert remote.engine == f"Dask cluster {address} (2 workers)"
    assert remote.rows == local.rows and len(remote.rows) == 8
    assert not unpickle.installed()
    out = _cli_here("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster", address,
                    "--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key, "--format",
                    "json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["rows"]) == 2
    assert not unpickle.installed()


def test_a_tls_cluster_refuses_a_client_without_its_certificates(tls_cluster, project, tmp_path):
    address, (ca, cert, key), _ = tls_cluster
    other = certificates(tmp_path, "another")            # certificates of another CA
    out = _cli_here("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster", address,
                    "--tls-ca-file", other[0], "--tls-cert", other[1], "--tls-key", other[2])
    assert out.returncode == 2 and "cannot reach the Dask scheduler" in out.stdout, out.stdout
    assert "error[E801]" in out.stdout
    out = _cli_here("sweep", str(project), "--grid", "hosts_per_rack=1..2", "--cluster",
                    address.replace("tls://", "tcp://"))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert not unpickle.installed()


def test_ctrl_c_while_connecting_undoes_the_guard(monkeypatch):
    # the guard (process-wide) stayed on after Ctrl-C during the connection: in a notebook,
    # every later use of Dask in the process read only plain data
    from astral_dsl.explore import cluster
    from astral_dsl.explore.engines import DaskEngine

    def interrupted(*_args):
        assert unpickle.installed()
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster, "probe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        DaskEngine(ClusterSpec("tcp://127.0.0.1:9"), timeout=1)
    assert not unpickle.installed()
