"""The Cython build of tokamata's hot pure-Python modules (CMakeLists.txt, TOKAMATA_CYTHON_MODULES).

The .py files are the source and the fallback; the build compiles them with annotations not
read as C types. What can still differ is C arithmetic on values Cython types itself (``ord``,
bytes literals): these tests pin the byte masks built that way, and that the modules the
build lists exist and are the ones imported.
"""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

from tokamata.automata import boolean

from tokamata.automata import derivatives as d
from tokamata.automata.dfa import LazyByteDfa
from tokamata.limits import Limits
from tokamata.syntax.json_schema import lexemes as lx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def compiled_modules() -> list[str]:
    text = (ROOT / "CMakeLists.txt").read_text()
    block = re.search(r"set\(TOKAMATA_CYTHON_MODULES(.*?)\)", text, re.S)
    assert block, "CMakeLists.txt lists no TOKAMATA_CYTHON_MODULES"
    return block.group(1).split()


@pytest.mark.parametrize("module", compiled_modules())
def test_listed_module_is_a_python_source_and_imports_compiled(module):
    assert (ROOT / "src" / "tokamata" / f"{module}.py").is_file(), module
    loaded = importlib.import_module("tokamata." + module.replace("/", "."))
    origin = pathlib.Path(loaded.__file__)
    # the build installs an extension module of the same name, which imports first
    assert origin.suffix in (".so", ".pyd"), f"{module} imported from {origin}, not the compiled build"
    source = ROOT / "src" / "tokamata" / f"{module}.py"
    assert origin.stat().st_mtime >= source.stat().st_mtime, \
        f"{origin} is older than {source}: run `make install` (or `make test`) to rebuild it"


@pytest.mark.parametrize("chars, members", [
    ("0123456789.", b"0123456789."),
    (" \t\n\r", b" \t\n\r"),
    ('"\\bfnrt', b'"\\bfnrt'),
    ("\x00\x7f\x80\xff", b"\x00\x7f\x80\xff"),
    ("", b""),
])
def test_byte_mask_sets_exactly_the_named_bytes(chars, members):
    mask = d.byte_mask(chars)
    assert [b for b in range(256) if mask >> b & 1] == sorted(set(members))


@pytest.mark.parametrize("text, accepted", [
    (b'"a"', True), (b'"\\n"', True), (b'"\\""', True), (b'"\\\\"', True), (b'"\\/"', True),
    (b'"\\b\\f\\r\\t"', True), (b'"\\u00e9"', True), (b'"\\u00E9"', True),
    (b'"\\\x0f"', False), (b'"\\x"', False), (b'"\\a"', False), (b'"\\N"', False), (b'"\\"', False),
    (b'"\x1f"', False), (b'"\\ud800"', False), (b'"\\ud83d\\ude00"', True),
])
def test_json_string_escapes_are_exactly_rfc_8259s(text, accepted):
    dfa = LazyByteDfa(lx.ANY_STRING, Limits())
    state = dfa.run(text)
    assert (state != -1 and dfa.accepting(state)) == accepted


def test_first_bytes_contains_every_byte_with_a_derivative():
    for node in (lx.ANY_STRING, lx.NUMBER, lx.INTEGER, lx.string_literal("key\u00e9"),
                 d.text_until(b"*/"), boolean.decimal_multiple(3, 1)):
        for _ in range(3):  # a few states deep
            first = d.first_bytes(node)
            live = [b for b in range(256) if d.derivative(node, b) is not d.NOTHING]
            assert all(first >> b & 1 for b in live), node
            node = d.derivative(node, live[0])


# The same walks in a subprocess that imports the listed modules from their .py files (a
# finder placed first on sys.meta_path), and here from the compiled build: the masks must be
# identical, so the fallback and the build enforce one language.
_WALK = r'''
import hashlib, json, random, sys
import numpy as np
if sys.argv[1] == "source":
    import importlib.abc, importlib.util, pathlib
    root, listed = pathlib.Path(sys.argv[2]), set(sys.argv[3].split(","))
    class Source(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.startswith("tokamata.") and name[len("tokamata."):].replace(".", "/") in listed:
                return importlib.util.spec_from_file_location(name, root / (name.replace(".", "/") + ".py"))
            return None
    sys.meta_path.insert(0, Source())
import tokamata
from tokamata.automata import derivatives
from real_tokenizers import llama3
expected = "py" if sys.argv[1] == "source" else "so"
assert derivatives.__file__.endswith(expected), derivatives.__file__
vocab = llama3().vocab
constraints = [
    tokamata.compile_json_schema({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
                                  "age": {"type": "integer", "minimum": 18, "maximum": 130},
                                  "tags": {"type": "array", "items": {"enum": ["a", "b\u00e9"]}}},
                                  "required": ["name"]}, vocab),
    tokamata.compile_json_schema({"anyOf": [{"type": "string", "pattern": "^[a-z]+\\d{2}$", "maxLength": 8},
                                            {"type": "string", "format": "date-time"}]}, vocab),
    tokamata.compile_regex(r"(\d{1,3}\.){3}\d{1,3}|[A-Za-z_]\w*", vocab),
    tokamata.compile_grammar('start: "(" NUMBER ("," NUMBER)* ")"\n%import common.NUMBER', vocab),
]
digest = hashlib.sha256()
bitmask = tokamata.allocate_bitmask(1, vocab.size)
rng = random.Random(5)
for constraint in constraints:
    for _ in range(4):
        matcher = constraint.matcher()
        for _ in range(40):
            matcher.fill_bitmask(bitmask, 0)
            digest.update(bitmask.tobytes())
            allowed = np.flatnonzero(np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:vocab.size])
            token = int(rng.choice(list(allowed)))
            if token in vocab.eos_token_ids or not matcher.consume(token) or matcher.is_terminated():
                break
print(digest.hexdigest())
'''


def test_source_and_compiled_build_give_the_same_masks():
    import os
    import subprocess
    import sys

    listed = ",".join(compiled_modules())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    digests = {}
    for mode in ("source", "compiled"):
        done = subprocess.run([sys.executable, "-c", _WALK, mode, str(ROOT / "src"), listed],
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        digests[mode] = done.stdout.strip()
    assert digests["source"] == digests["compiled"]
