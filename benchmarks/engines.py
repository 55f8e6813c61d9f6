"""The constrained-decoding libraries under test, each behind one thin adapter.

Holds ``Engine`` (the common interface), its four implementations (tokamata, llguidance,
xgrammar, outlines-core), ``ENGINES`` (name -> class) and ``REFERENCE``, the engine that ratios
and mask disagreements are stated against. ``compile`` takes a regex (bench_regex.py),
``compile_grammar`` a ``grammar_workload.GrammarCase`` (bench_grammar.py), ``compile_schema``
a JSON Schema (bench_json_schema.py); all return what ``matcher`` takes.

Invariants

* Adapters call each library's public API the way its integrations do; ``filler`` and
  ``consumer`` return ready-bound callables, so a timed region is exactly one library call.
* ``compile`` is a real compile: no cache of the library can answer it, provided that
  ``reset_caches()`` was called first on engines with ``has_caches``.
* ``compile_grammar`` is a fresh compile in the same sense; it raises ``Unavailable`` on an
  engine without grammars (outlines-core) or whose installed version lacks the API.
* ``compile_schema`` takes the schema's JSON text and is a fresh compile in the same sense, with
  the specification's semantics where the library lets us choose (additional properties allowed
  unless the schema says otherwise); any exception it raises is the library refusing the schema.
* ``translate`` maps a Python ``re`` pattern to the engine's dialect without changing its language.
* ``setup`` raises ``Unavailable`` when the library cannot be used; the engine is then skipped.
* All engines fill the same int32 ``[1, ceil(V/32)]`` numpy bitmask (bit ``t & 31`` of word
  ``t >> 5`` set = token ``t`` allowed).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from workload import TokenizerData, rust_dialect, xgrammar_dialect


class Unavailable(Exception):
    pass


class Engine:
    """One constrained-decoding library behind a uniform, thin interface.

    Every method calls the library's public API the way its integrations do; ``filler`` and
    ``consumer`` return ready-bound callables so that the timed region is one library call.
    """

    name = "?"
    packages: tuple[str, ...] = ()

    def setup(self, tok: TokenizerData) -> None:
        raise NotImplementedError

    def translate(self, pattern: str) -> str:
        return pattern

    #: True when the engine keeps process-wide caches that a repeated compile of the same
    #: regex would hit, and reset_caches() clears them
    has_caches = False

    def reset_caches(self) -> None:
        """Forget everything an earlier compile left behind, so the next compile is fresh."""

    def compile(self, pattern: str) -> Any:
        """Fresh compile of an already translated pattern (no cache hit possible)."""
        raise NotImplementedError

    def compile_grammar(self, case: Any) -> Any:
        """Fresh compile of a ``grammar_workload.GrammarCase``: ``case.kind`` is "json" (the
        engine's own generic JSON) or "lark" (``case.lark``, or ``case.ebnf`` for engines that
        read GBNF-style EBNF)."""
        raise Unavailable(f"{self.name}: no grammar support in this benchmark")

    def compile_schema(self, schema: str) -> Any:
        """Fresh compile of a JSON Schema given as JSON text; the engine's own exception when
        it refuses the schema."""
        raise Unavailable(f"{self.name}: no JSON Schema support in this benchmark")

    def matcher(self, compiled: Any) -> Any:
        raise NotImplementedError

    def filler(self, m: Any, buf: np.ndarray) -> Callable[[], Any]:
        raise NotImplementedError

    def consumer(self, m: Any) -> Callable[[int], Any]:
        raise NotImplementedError

    def accepting(self, m: Any) -> bool:
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        from importlib.metadata import PackageNotFoundError, version

        out = {}
        for p in self.packages:
            try:
                out[p] = version(p)
            except PackageNotFoundError:
                out[p] = "?"
        return out


class Tokamata(Engine):
    name = "tokamata"
    packages = ("tokamata",)

    def setup(self, tok):
        try:
            import tokamata
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            raise Unavailable(f"import tokamata failed: {e!r}") from e
        self.tk = tokamata
        self.vocab = tokamata.Vocabulary.from_tokenizer_json(tok.path, eos_token_ids=[tok.eos_id])
        if self.vocab.size != tok.vocab_size:
            raise Unavailable(f"tokamata vocabulary size {self.vocab.size} != {tok.vocab_size}")
        self.reset_caches()

    has_caches = True

    def reset_caches(self):
        # tokamata keeps two caches across compiles, so compiling a regex again is mostly cache
        # hits: its process-wide interned expressions (with their memoized derivatives and
        # byte classes) and the token rows shared by all constraints of one vocabulary.
        # tokamata.clear_caches(vocab) drops both; the empty row cache is then created here,
        # outside any timed region.
        from tokamata import trie as _trie

        self.tk.clear_caches(self.vocab)
        _trie.shared_rows(self.vocab)

    def compile(self, pattern):
        return self.tk.compile_regex(pattern, self.vocab)

    #: tokamata.compile_json's whitespace mode used for the "json" grammar
    json_whitespace = "compact"
    #: JSON spelling (compile_json, compile_json_schema): "any" (every RFC 8259 spelling), as the
    #: other engines accept and as the workloads' texts are written (json.dumps: 2.0, 1e-05);
    #: bench_json_schema.py's --tokamata-spelling sets it
    spelling = "any"

    def _spelling(self, compile_function) -> dict:
        """``{"spelling": ...}`` for a tokamata that has the option (older ones: every spelling)."""
        import inspect

        return {"spelling": self.spelling} if "spelling" in inspect.signature(compile_function).parameters else {}

    def compile_grammar(self, case):
        if not hasattr(self.tk, "compile_grammar"):
            raise Unavailable("this tokamata has no compile_grammar / compile_json yet")
        if case.kind == "json":
            return self.tk.compile_json(self.vocab, whitespace=self.json_whitespace,
                                        **self._spelling(self.tk.compile_json))
        if case.kind == "gbnf":
            return self.tk.compile_gbnf(case.gbnf, self.vocab)
        return self.tk.compile_grammar(case.lark, self.vocab)

    #: tokamata.compile_json_schema's whitespace and property order (bench_json_schema.py options)
    schema_whitespace = "compact"
    schema_property_order = "schema"

    def compile_schema(self, schema):
        if not hasattr(self.tk, "compile_json_schema"):
            raise Unavailable("this tokamata has no compile_json_schema yet")
        return self.tk.compile_json_schema(schema, self.vocab, whitespace=self.schema_whitespace,
                                           property_order=self.schema_property_order,
                                           **self._spelling(self.tk.compile_json_schema))

    def matcher(self, compiled):
        return compiled.matcher()

    def filler(self, m, buf):
        return functools.partial(m.fill_bitmask, buf, 0)

    def consumer(self, m):
        return m.consume

    def accepting(self, m):
        return bool(m.is_accepting())


class LLGuidance(Engine):
    name = "llguidance"
    packages = ("llguidance",)

    def setup(self, tok):
        try:
            import llguidance
            import llguidance.numpy as lln
        except ImportError as e:
            raise Unavailable(f"import llguidance failed: {e!r}") from e
        self.llg, self.lln = llguidance, lln
        # LLTokenizer takes the tokenizer.json text (what llguidance.hf.from_tokenizer passes);
        # default slices, as in vLLM / SGLang.
        with open(tok.path, encoding="utf-8") as f:
            self.tokenizer = llguidance.LLTokenizer(f.read(), n_vocab=tok.vocab_size, eos_token=tok.eos_id)

    def translate(self, pattern):
        return rust_dialect(pattern)

    def compile(self, pattern):
        # llguidance has no compiled-grammar object apart from the matcher: LLMatcher() builds
        # the grammar, the lexer and the parser. The pristine matcher is the "constraint";
        # deep copies share its lazily built lexer DFA, so later copies run warm.
        return self._matcher_of(self.llg.LLMatcher.grammar_from_regex(pattern))

    def compile_grammar(self, case):
        # "json" is also Lark text here: `start: %json {}` (any JSON value); GBNF goes through
        # llguidance's own converter (grammar_from, as its llama.cpp integration does), timed
        if case.kind == "gbnf":
            return self._matcher_of(self.llg.grammar_from("gbnf", case.gbnf))
        return self._matcher_of(self.llg.LLMatcher.grammar_from_lark(case.lark))

    def compile_schema(self, schema):
        # default JSON options, as in vLLM / SGLang: flexible whitespace, schema order,
        # additionalProperties as the schema says
        return self._matcher_of(self.llg.LLMatcher.grammar_from_json_schema(schema))

    def _matcher_of(self, grammar):
        m = self.llg.LLMatcher(self.tokenizer, grammar, log_level=1)
        if m.is_error():
            raise RuntimeError(f"llguidance: {m.get_error()}")
        return m

    def matcher(self, compiled):
        return compiled.deep_copy()

    def first_matcher(self, compiled):
        return compiled  # TTFM: the freshly built matcher itself

    def filler(self, m, buf):
        return functools.partial(self.lln.fill_next_token_bitmask, m, buf, 0)

    def consumer(self, m):
        return m.consume_token

    def accepting(self, m):
        return bool(m.is_accepting())


class XGrammar(Engine):
    name = "xgrammar"
    packages = ("xgrammar", "transformers", "torch")

    def setup(self, tok):
        try:
            import torch
            import xgrammar
            from transformers import PreTrainedTokenizerFast
        except ImportError as e:
            raise Unavailable(f"import xgrammar/transformers failed: {e!r}") from e
        self.xgr, self.torch = xgrammar, torch
        hf = PreTrainedTokenizerFast(tokenizer_file=tok.path)
        self.info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=tok.vocab_size, stop_token_ids=[tok.eos_id])
        # cache disabled: every compile_regex() is a real compile. Default max_threads (8).
        self.compiler = xgrammar.GrammarCompiler(self.info, cache_enabled=False)
        self._tensors: dict[int, Any] = {}

    def translate(self, pattern):
        return xgrammar_dialect(pattern)

    def compile(self, pattern):
        return self.compiler.compile_regex(pattern)

    def compile_grammar(self, case):
        if case.kind == "json":
            return self.compiler.compile_builtin_json_grammar()
        if case.ebnf is None:
            raise Unavailable(f"no xgrammar EBNF conversion of {case.name}")
        return self.compiler.compile_grammar(case.ebnf)

    def compile_schema(self, schema):
        # any_whitespace=True (default) accepts compact text; strict_mode=False follows the
        # specification (xgrammar's default True forbids properties and items the schema does
        # not list, i.e. refuses valid instances)
        return self.compiler.compile_json_schema(schema, strict_mode=False)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def filler(self, m, buf):
        # xgrammar's native bitmask is a torch tensor; a zero-copy view of the shared buffer.
        t = self._tensors.get(id(buf))
        if t is None:
            t = self._tensors[id(buf)] = self.torch.from_numpy(buf)
        return functools.partial(m.fill_next_token_bitmask, t, 0)

    def consumer(self, m):
        return m.accept_token

    def accepting(self, m):
        return bool(m.is_terminated() or m.is_completed())


class OutlinesCore(Engine):
    name = "outlines-core"
    packages = ("outlines_core",)

    def setup(self, tok):
        try:
            import outlines_core
        except ImportError as e:
            raise Unavailable(f"import outlines_core failed: {e!r}") from e
        self.oc = outlines_core
        # Vocabulary(eos, {token bytes: [ids]}): ordinary tokens only, byte-level alphabet
        # undone (what outlines' own tokenizer adapters produce, in bytes).
        vmap: dict[bytes, list[int]] = {}
        for i, b in tok.token_bytes.items():
            vmap.setdefault(b, []).append(i)
        self.vocabulary = outlines_core.Vocabulary(tok.eos_id, vmap)

    def translate(self, pattern):
        return rust_dialect(pattern)

    def compile(self, pattern):
        return self.oc.Index(pattern, self.vocabulary)

    def matcher(self, compiled):
        return self.oc.Guide(compiled)

    def filler(self, m, buf):
        row = buf[0]
        return functools.partial(m.write_mask_into, row.ctypes.data, row.size, row.itemsize)

    def consumer(self, m):
        return functools.partial(m.advance, return_tokens=False)

    def accepting(self, m):
        return bool(m.is_finished())


ENGINES: dict[str, type[Engine]] = {e.name: e for e in (Tokamata, LLGuidance, XGrammar, OutlinesCore)}
REFERENCE = "llguidance"  # ratios are engine / llguidance
