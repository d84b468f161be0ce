"""Which Dask cluster the work runs on, and why the client may trust it.

A Dask cluster runs whatever its clients send, and its peers' answers are pickles
(unpickle.py): whoever can join a cluster, or stand in for its scheduler, can run code in the
workers and, through Dask's protocol, in the client. So the client talks to a cluster over
TLS with the cluster's certificates (`tls://`, Dask's Security: both ends show a certificate
signed by the cluster's CA, which is how Dask authenticates peers), or over plain TCP only to
this machine (loopback) unless the user says `--insecure-cluster`. An address without a
protocol is refused rather than taken as plain TCP (Dask's own default)."""
from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, Optional, Tuple
from urllib.parse import urlsplit


from astral_dsl import records

SECURE = ("tls", "wss")          # Dask's TLS transports: the certificates authenticate the peers
PLAIN = ("tcp", "ws")            # no authentication: loopback only, unless insecure
LOCAL = ("inproc",)              # this process


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
    if scheme in LOCAL:
        return address, None
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
            raise ClusterError(f"{name} {path}: no such file")
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
    return sec
