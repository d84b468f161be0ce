"""Dask peers for the cluster tests, each in a process of its own (the client guards Dask's
unpickling process-wide while it is open, so a scheduler in the test's process would be guarded
too): a local cluster (a scheduler and worker processes, over TCP or TLS), a bare scheduler,
and a rogue worker that answers the client's version probe with a pickle that runs code where
it is read. Certificates for a TLS cluster are made here with `cryptography`.

    python -m tests.explore.dask_peers cluster N [CA CERT KEY]   # prints the scheduler address
    python -m tests.explore.dask_peers scheduler
    python -m tests.explore.dask_peers rogue ADDRESS MODE MARKER_PREFIX

Each runs until its standard input closes."""
from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]


# ---- the payload a rogue worker sends -----------------------------------------------------------
class Payload:
    """Unpickling it runs `exec`: the file MARKER + the reading process's id is created."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __reduce__(self):
        code = f"import os; open({self.prefix!r} + str(os.getpid()), 'w').close()"
        return exec, (code,)


def rogue_reply(mode: str, prefix: str):
    """The rogue worker's answer to `client.run`: the payload as a result Dask's serializers
    pickle ("serialized"), or handed to the scheduler as an already pickled object that the
    scheduler forwards to the client unread ("forwarded": Dask's `__Pickled__` frames)."""
    from distributed.protocol import pickle
    from distributed.protocol.serialize import Pickled, ToPickle, to_serialize

    if mode == "serialized":
        return {"status": "OK", "result": to_serialize(Payload(prefix))}
    if mode == "forwarded":
        inner = Pickled({"pickled-obj": pickle.dumps(Payload(prefix))}, [])
        return {"status": "OK", "result": ToPickle(inner)}
    raise ValueError(mode)


def no_answer(*_args) -> list:
    """A task standing in for evaluate_points or screen on a worker that answers with plain
    data of the wrong shape (another version of astral_dsl, or a rogue): no rows at all."""
    return []


async def _rogue(address: str, mode: str, prefix: str) -> None:
    from distributed import Worker

    class RogueWorker(Worker):
        def run(self, comm, function, args=(), wait=True, kwargs=None):
            async def answer():
                return rogue_reply(mode, prefix)
            return answer()

    async with RogueWorker(address, nthreads=1, dashboard=False) as w:
        print(w.address, flush=True)
        await _until_stdin_closes()
        await w.close()


async def _scheduler() -> None:
    from distributed import Scheduler

    async with Scheduler(host="127.0.0.1", port=0, dashboard_address=None) as s:
        print(s.address, flush=True)
        await _until_stdin_closes()


async def _until_stdin_closes() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


def _cluster(workers: int, tls: Optional[Tuple[str, str, str]]) -> None:
    import dask
    from distributed import LocalCluster

    # The workers are forked from this process, which has Distributed and the package's
    # exploration modules imported, rather than spawned as new interpreters that import them
    # again (Dask's default): about 1.5 s of CPU less per worker. They are still processes of
    # their own, reached over TCP or TLS, that compile the project from the bundle sent.
    import astral_dsl.explore.engines  # noqa: F401

    dask.config.set({"distributed.worker.multiprocessing-method": "fork"})
    kw = {}
    if tls:
        from distributed.security import Security

        ca, cert, key = tls
        kw["security"] = Security(tls_ca_file=ca, tls_scheduler_cert=cert, tls_scheduler_key=key,
                                  tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert,
                                  tls_client_key=key, require_encryption=True)
        kw["protocol"] = "tls://"
    c = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                     dashboard_address=None, host="127.0.0.1", **kw)
    print(c.scheduler_address, flush=True)
    sys.stdin.read()
    c.close()


# ---- for the tests: start one, get its address ----------------------------------------------
class Peer:
    def __init__(self, *args: str, timeout: float = 120):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.explore.dask_peers", *args],
                                     cwd=REPO, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            self.close()
            raise RuntimeError(f"dask_peers {' '.join(args)} did not start")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_for_workers(address: str, n: int, security=None, timeout: float = 60) -> None:
    """Until the scheduler at `address` has n workers (from a process that is not guarded)."""
    code = ("import sys, distributed; c = distributed.Client(sys.argv[1], timeout=30); "
            "c.wait_for_workers(int(sys.argv[2]), timeout=60); c.close()")
    subprocess.run([sys.executable, "-c", code, address, str(n)], check=True, timeout=timeout,
                   capture_output=True)


# ---- certificates -----------------------------------------------------------------------------
def certificates(folder: Path, name: str = "astral-test") -> Tuple[str, str, str]:
    """A self-signed CA and a certificate it signs (for 127.0.0.1 and localhost), with the
    certificate's key: (ca.pem, cert.pem, key.pem) in `folder`."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    paths = []
    for file, data in (("ca.pem", ca.public_bytes(pem)), ("cert.pem", cert.public_bytes(pem)),
                       ("key.pem", key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))):
        (folder / file).write_bytes(data)
        paths.append(str(folder / file))
    os.chmod(paths[2], 0o600)
    return paths[0], paths[1], paths[2]


def main(argv: List[str]) -> None:
    what = argv[0]
    if what == "cluster":
        _cluster(int(argv[1]), tuple(argv[2:5]) if len(argv) >= 5 else None)
    elif what == "scheduler":
        asyncio.run(_scheduler())
    elif what == "rogue":
        asyncio.run(_rogue(argv[1], argv[2], argv[3]))
    else:
        raise SystemExit(f"unknown peer {what}")


if __name__ == "__main__":
    main(sys.argv[1:])
