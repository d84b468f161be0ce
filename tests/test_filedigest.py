"""filedigest.py: a large file's SHA-256 remembered in the user cache while the file is unchanged;
always the digest of the file as it is."""
from __future__ import annotations

import hashlib
import os

import pytest

from astral_dsl import filedigest


@pytest.fixture
def hashed(tmp_path, monkeypatch):
    """A settled file (changed an hour ago), its cache, and a counting hash of it."""
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "climate.csv"
    path.write_bytes(b"hour,dry_bulb\n" * 1000)
    hour_ago = os.stat(path).st_mtime_ns - 3600 * 10**9
    os.utime(path, ns=(hour_ago, hour_ago))
    calls = []

    def compute():
        calls.append(1)
        return hashlib.sha256(path.read_bytes()).hexdigest()

    return path, compute, calls


def _changed_long_ago(monkeypatch):
    """The status change time is not settable: the clock moves on instead."""
    now = os.stat(__file__).st_ctime_ns + 10**15
    monkeypatch.setattr(filedigest.time, "time_ns", lambda: now)


def test_an_unchanged_file_is_hashed_once(hashed, monkeypatch):
    path, compute, calls = hashed
    _changed_long_ago(monkeypatch)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert filedigest.sha256(path, compute) == digest
    assert filedigest.sha256(str(path), compute) == digest
    assert len(calls) == 1


def test_a_changed_file_is_hashed_again(hashed, monkeypatch):
    path, compute, calls = hashed
    _changed_long_ago(monkeypatch)
    filedigest.sha256(path, compute)
    stat = os.stat(path)
    path.write_bytes(b"hour,dry_bulb\n" * 999 + b"hour,dew_pt\n")    # another size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))           # the same mtime
    assert filedigest.sha256(path, compute) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(calls) == 2


@pytest.mark.parametrize("why", ["changed just now", "no cache"])
def test_a_digest_is_not_remembered(hashed, monkeypatch, why):
    """A file whose status changed a moment ago (its times might not show a write in the same
    tick), or no user cache: hashed every time."""
    path, compute, calls = hashed
    if why == "no cache":
        _changed_long_ago(monkeypatch)
        monkeypatch.setenv("ASTRAL_CACHE_DIR", "off")
    assert filedigest.sha256(path, compute) == filedigest.sha256(path, compute)
    assert len(calls) == 2


def test_a_forged_entry_is_not_a_digest(hashed, monkeypatch):
    path, compute, calls = hashed
    _changed_long_ago(monkeypatch)
    filedigest.sha256(path, compute)
    for entry in (path.parent / "cache").iterdir():
        text = entry.read_bytes().replace(b'"', b"'")          # its payload no longer matches
        entry.write_bytes(text)
    assert filedigest.sha256(path, compute) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(calls) == 2
