"""Which Dask cluster the work runs on, and why the client may trust it.

A Dask cluster runs whatever its clients send, and its peers' answers are pickles
(unpickle.py): whoever can join a cluster, or stand in for its scheduler, can run code in the
workers and, through Dask's protocol, in the client. So the client talks to a cluster over
TLS with the cluster's certificates (`tls://`, Dask's Security: both ends show a certificate
signed by the cluster's CA, which is how Dask authenticates peers), or over plain TCP only to
this machine (loopback) unless the user says `--insecure-cluster`. An address without a
protocol is refused rather than taken as plain TCP (Dask's own default), and so is `inproc://`:
the client's guard (unpickle.py) holds for its whole process, so a cluster in the client's
process could not read its own tasks.

Before Dask's Client is made, probe() asks the address who it is, within the timeout: Dask's
Client waits forever on a port where another service answers (an HTTP server), and takes a
worker's address for a scheduler's (then fails with a pickle it cannot read)."""
from __future__ import annotations

import ipaddress
import threading
from pathlib import Path
from typing import Any, Optional, Tuple
from urllib.parse import urlsplit


from astral_dsl import records

SECURE = ("tls", "wss")          # Dask's TLS transports: the certificates authenticate the peers
PLAIN = ("tcp", "ws")            # no authentication: loopback only, unless insecure


class ClusterError(Exception):
    """The address or the certificates cannot be used (a usage error)."""


@records.frozen
class ClusterSpec:
    address: str
    ca_file: Optional[str] = None        # the cluster's CA certificate (PEM)
    cert: Optional[str] = None           # this client's certificate (PEM), signed by that CA
    key: Optional[str] = None            # its private key, when not in the certificate's file
    insecure: bool = False               # allow plain tcp:// to another machine

    @property
    def scheme(self) -> str:
        return self.address.split("://", 1)[0].lower() if "://" in self.address else ""


def loopback(host: str) -> bool:
    """Whether `host` names this machine's loopback interface (localhost, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host(address: str) -> str:
    try:
        parts = urlsplit(address)
        parts.port                              # raises ValueError for a bad port
    except ValueError as exc:
        raise ClusterError(f"--cluster {address}: not a Dask scheduler address ({exc})") \
            from None
    if not parts.hostname:
        raise ClusterError(f"--cluster {address}: the address names no host")
    return parts.hostname


def connection(spec: ClusterSpec) -> Tuple[str, Any]:
    """(address, Dask Security or None) to connect with; ClusterError when the address or the
    certificates cannot be used as the module docstring says."""
    address, scheme = spec.address.strip(), spec.scheme
    if not scheme:
        raise ClusterError(
            f"--cluster {address}: name the protocol: tls://{address} with the cluster's "
            f"certificates (--tls-ca-file, --tls-cert, --tls-key), or tcp://{address} for a "
            "scheduler on this machine (or with --insecure-cluster)")
    if scheme == "inproc":
        raise ClusterError(
            f"--cluster {address}: a scheduler in this process cannot serve it (the client "
            "reads only plain data from Dask in its whole process, its own workers' tasks "
            "too); start the cluster in processes of its own (`dask scheduler`, or "
            "LocalCluster(processes=True)) and give its tcp://127.0.0.1:PORT address")
    if scheme not in SECURE + PLAIN:
        raise ClusterError(f"--cluster {address}: expected a Dask scheduler address such as "
                           "tls://scheduler:8786")
    host = _host(address)
    if scheme in PLAIN:
        if spec.ca_file or spec.cert or spec.key:
            raise ClusterError(f"--cluster {address}: certificates need tls:// (or wss://)")
        if not loopback(host) and not spec.insecure:
            raise ClusterError(
                f"--cluster {address}: plain {scheme}:// to another machine authenticates no "
                "one: anyone who can reach the scheduler can join the cluster, and its "
                "workers and scheduler can run code on every machine of it; use tls:// with "
                "the cluster's certificates (--tls-ca-file, --tls-cert, --tls-key), or pass "
                "--insecure-cluster on a network you trust")
        return address, None
    return address, security(spec)


def security(spec: ClusterSpec):
    """Dask's Security for a TLS cluster: the files given, else Dask's configuration
    (distributed.comm.tls.ca-file, .client.cert, .client.key)."""
    from distributed.security import Security

    for name, path in (("--tls-ca-file", spec.ca_file), ("--tls-cert", spec.cert),
                       ("--tls-key", spec.key)):
        if path is not None and not Path(path).is_file():
            raise ClusterError(f"{name} {path}: "
                               f"{'not a file' if Path(path).exists() else 'no such file'}")
    if spec.ca_file or spec.cert or spec.key:
        sec = Security(tls_ca_file=spec.ca_file, tls_client_cert=spec.cert,
                       tls_client_key=spec.key, require_encryption=True)
    else:
        sec = Security(require_encryption=True)
    if not (sec.tls_ca_file and sec.tls_client_cert):
        raise ClusterError(
            f"--cluster {spec.address}: TLS needs the cluster's CA certificate and this "
            "client's certificate: --tls-ca-file FILE --tls-cert FILE [--tls-key FILE], or "
            "distributed.comm.tls.ca-file and distributed.comm.tls.client.cert (and .key) in "
            "Dask's configuration")
    readable(spec, sec)
    return sec


def readable(spec: ClusterSpec, sec) -> None:
    """That the CA file and this client's certificate and key load (a bad one otherwise reads
    as Dask's "cannot reach the Dask scheduler ([SSL] PEM lib)", naming no file); ClusterError.
    An encrypted key is refused rather than prompted for (Dask would ask on the terminal)."""
    import ssl

    ca = f"--tls-ca-file {sec.tls_ca_file}" if spec.ca_file else \
        f"distributed.comm.tls.ca-file {sec.tls_ca_file}"
    cert = f"--tls-cert {sec.tls_client_cert}" if spec.cert else \
        f"distributed.comm.tls.client.cert {sec.tls_client_cert}"
    if sec.tls_client_key:
        cert += f" (key {sec.tls_client_key})"

    def encrypted():
        raise ClusterError(f"{cert}: the private key is encrypted; Dask reads an unencrypted "
                           "key only (keep its file readable by you alone)")
    try:
        ssl.create_default_context(cafile=sec.tls_ca_file)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ClusterError(f"{ca}: not a CA certificate in PEM ({exc})") from None
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(
            sec.tls_client_cert, sec.tls_client_key, password=encrypted)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ClusterError(f"{cert}: not a certificate and its matching private key in PEM "
                           f"({exc}); give the key with --tls-key when it is in a file of its "
                           "own") from None


def probe(address: str, security, timeout: float) -> None:
    """That a Dask scheduler answers at `address` within `timeout` seconds (module docstring);
    ClusterError otherwise. The answer is read through Dask's protocol: open the guard
    (unpickle.py) first."""
    import asyncio

    async def ask():
        from distributed.comm import connect

        args = security.get_connection_args("client") if security is not None else {}
        comm = await connect(address, timeout=timeout, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    box: dict = {}

    def run() -> None:
        try:
            box["answer"] = asyncio.run(asyncio.wait_for(ask(), timeout + 1))
        except BaseException as exc:  # noqa: BLE001 - reported below, in the caller's thread
            box["error"] = exc

    # a thread of its own: the caller may run an event loop already (a notebook)
    worker = threading.Thread(target=run, name="astral-cluster-probe", daemon=True)
    worker.start()
    worker.join(timeout + 6)
    error = box.get("error")
    if "answer" not in box and (error is None or isinstance(error, TimeoutError)):
        raise ClusterError(f"--cluster {address}: cannot reach the Dask scheduler: nothing "
                           f"answered as one within {timeout:g} s; check the address and port "
                           "(the scheduler's, 8786 by default), and that it is up and "
                           "reachable from here")
    if error is not None:
        if "trying to connect" in str(error):       # nothing accepted the connection
            hint = ("; check that the scheduler is up, and its address and port (8786 by "
                    "default)")
        elif security is not None:
            hint = ("; over TLS both ends show a certificate signed by the CA the other trusts: "
                    "check --tls-ca-file (the cluster's CA) and that it signed --tls-cert")
        else:
            hint = "; a scheduler that closes plain tcp:// may want tls:// and its certificates"
        raise ClusterError(f"--cluster {address}: cannot reach the Dask scheduler "
                           f"({type(error).__name__}: {str(error)[:500]}){hint}")
    answer = box["answer"]
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        what = f"a Dask {kind}" if isinstance(kind, str) and kind.isidentifier() else \
            "something other than Dask"
        raise ClusterError(f"--cluster {address}: {what} answered there, not a Dask "
                           "scheduler; give the scheduler's address (the one its workers "
                           "connect to, 8786 by default)")
