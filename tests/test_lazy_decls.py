"""The shipped stdlib trees' top-level declarations are read on first use (syntax/lazy.py): the
tree is the one an eager read gives, node for node; a damaged declaration is parsed again; and
a user-cache entry cannot hold a lazy declaration."""
from __future__ import annotations

import copy
import json
import pickle
import threading

import pytest

from astral_dsl import resources, usercache
from astral_dsl.syntax import ast, astcache, lazy
from astral_dsl.syntax.parser import parse
from astral_dsl.syntax.source import Source


def _source(module: str = "cooling") -> Source:
    path = resources.stdlib_dir() / f"{module}.astral"
    return Source(str(path), path.read_text(encoding="utf-8"))


@pytest.fixture
def fresh(monkeypatch):
    """The shipped trees read again in each test (not those of earlier tests, maybe read)."""
    monkeypatch.setattr(astcache, "_SHIPPED", {})


def _eager(source: Source) -> ast.Module:
    """The tree as an eager read of the shipped line gives it (no lazy declaration)."""
    key = usercache.key_digest(astcache._version(), source.text)
    for line in astcache.SHIPPED.read_text(encoding="utf-8").splitlines():
        head, _, rest = line.partition(" ")
        if head == key:
            doc, _, later = rest.partition("\t")
            tree = json.loads(doc, object_hook=astcache._hook(source.name, (later, source)))
            return ast.Module(tree.file, tuple(lazy.materialise(i) for i in tree.items),
                              tree.span)
    raise AssertionError("not shipped")


@pytest.mark.parametrize("module", ["cooling", "hardware", "power"])
def test_a_lazy_declaration_reads_as_the_parse_gives_it(fresh, module):
    source = _source(module)
    tree = astcache.shipped(source)
    decls = [i for i in tree.items if isinstance(i, ast.Decl)]
    assert decls and all(type(d) is lazy.LazyDecl for d in decls)
    # the kind, name and span are read with the module, the rest on first use
    parsed = [i for i in parse(source).items if isinstance(i, ast.Decl)]
    assert [(d.kind.name, d.name.name, d.span) for d in decls] == \
        [(d.kind.name, d.name.name, d.span) for d in parsed]
    assert all(type(d) is lazy.LazyDecl for d in decls)
    first = decls[0]
    body = first.body
    assert type(first) is ast.Decl and first.body is body       # read once, a plain node now
    assert all(type(d) is lazy.LazyDecl for d in decls[1:])
    assert astcache._encode(tree) == astcache._encode(parse(source))
    assert astcache._encode(tree) == astcache._encode(_eager(source))
    assert all(type(d) is ast.Decl for d in decls)


def test_a_lazy_declaration_shows_copies_and_pickles_as_a_declaration(fresh):
    source = _source()
    parsed = parse(source).items[0]
    for use in (repr, lambda d: repr(copy.deepcopy(d)),
                lambda d: repr(pickle.loads(pickle.dumps(d)))):
        tree = astcache.shipped(source)
        assert type(tree.items[0]) is lazy.LazyDecl
        assert use(tree.items[0]) == repr(parsed)
        astcache._SHIPPED.clear()
    clone = pickle.loads(pickle.dumps(astcache.shipped(source).items[1]))
    assert type(clone) is ast.Decl


def test_threads_read_a_declaration_once(fresh):
    decl = astcache.shipped(_source("hardware")).items[3]
    bodies = []
    threads = [threading.Thread(target=lambda: bodies.append(decl.body)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bodies) == 8 and all(b is bodies[0] for b in bodies)


@pytest.mark.parametrize("damage", ["null", "[1,2]", "{\"Path\":[1]}", "[nul"])
def test_a_damaged_lazy_declaration_is_parsed_again(fresh, tmp_path, monkeypatch, damage):
    source = _source()
    key = usercache.key_digest(astcache._version(), source.text)
    lines = astcache.SHIPPED.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(key + " "))
    doc, _, later = lines[at].partition("\t")
    entry = json.loads(doc.partition(" ")[2])
    start, end = entry["Module"][1][0][lazy.LAZY][3:]
    lines[at] = doc + "\t" + later[:start] + damage.ljust(end - start) + later[end:]
    shipped = tmp_path / "stdlib_trees.txt"
    shipped.write_text("".join(lines), encoding="utf-8")
    monkeypatch.setattr(astcache, "SHIPPED", shipped)
    tree = astcache.shipped(source)
    assert type(tree.items[0]) is lazy.LazyDecl
    assert astcache._encode(tree) == astcache._encode(parse(source))


def test_a_user_cache_entry_cannot_hold_a_lazy_declaration(tmp_path, monkeypatch):
    """Only the shipped file has lazy declarations: in a user-cache entry one is not a tree,
    and the module is parsed again."""
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "cache"))
    source = _source()
    key = usercache.key_digest(astcache._version(), source.text)
    tree = astcache._encode(parse(source))
    name = f"ast-cooling-{key[:16]}"                            # as parse_cached names it
    assert usercache.write(name, key, tree)
    assert astcache.parse_cached(source, None).items[0].name.name == "Water"     # read back
    decl = tree["Module"][1][0]["Decl"]
    tree["Module"][1][0] = {lazy.LAZY: [decl[0], decl[1], decl[5], 0, 2]}
    assert usercache.write(name, key, tree)
    calls = []
    again = astcache.parse_cached(source, lambda s: calls.append(s) or parse(s))
    assert calls == [source]
    assert type(again.items[0]) is ast.Decl
    assert astcache._encode(again) == astcache._encode(parse(source))
