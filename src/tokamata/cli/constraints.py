"""Which constraint a command works with: the options every command shares (``--regex``,
``--grammar FILE``, ``--gbnf FILE``, ``--json``, ``--schema FILE``, ``--type MODULE:CLASS`` with ``--syntax``,
``--characters``, ``--canonical``, ``--token-filters``), how to
compile them, and how to check an output independently of tokamata.

Invariants:
- Exactly one constraint option is given (argparse enforces it). Files are read here; a missing
  or unreadable file, or a schema file that is not JSON, is a :class:`CliError` naming the file
  (exit status 2), raised before anything slow happens (no model is loaded first).
- Outputs are judged by independent validators: ``re.fullmatch`` for regexes, the ``lark``
  package for Lark grammars, ``json`` for JSON, ``jsonschema`` for schemas, reading the value
  back into the type for ``--type``; GBNF has none (``None``: not checked).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["CliError", "Spec", "add_constraint_options", "spec_from_args", "compile_spec", "validate"]


class CliError(Exception):
    """A usage problem the command line reports in one line (exit status 2), with a hint."""


@dataclass(frozen=True)
class Spec:
    """A constraint as the user gave it: ``kind`` (regex, grammar, gbnf, json, schema, type,
    structural_tag), its text (a pattern, grammar text, schema or structural tag JSON text;
    empty for ``json``), where it came from, the character filter, canonical mode and the
    token filters (names of ``tokamata.vocab.token_filters.FILTER_NAMES``)."""

    kind: str
    text: str
    origin: str
    characters: str | None = None
    syntax: str = "json"
    canonical: bool = False
    token_filters: tuple[str, ...] = ()

    def describe(self, width: int = 160) -> str:
        body = {"regex": f"/{self.text}/", "json": "any JSON value",
                "type": f"type {self.text} ({self.syntax})"}.get(self.kind)
        if body is None:
            one_line = " ".join(line.strip() for line in self.text.strip().splitlines())
            body = f"{self.kind} {self.origin}: {one_line}"
        return body if len(body) <= width else body[: width - 3] + "..."


def add_constraint_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--regex", metavar="PATTERN", help="a Python-style regex (the whole output must match)")
    group.add_argument("--grammar", metavar="FILE", help="a Lark-style grammar file (start rule: start)")
    group.add_argument("--gbnf", metavar="FILE", help="a llama.cpp GBNF grammar file (start rule: root)")
    group.add_argument("--json", dest="any_json", action="store_true", help="any JSON value")
    group.add_argument("--schema", metavar="FILE", help="a JSON Schema file")
    group.add_argument("--structural-tag", dest="structural_tag", metavar="FILE",
                       help="a structural tag (the JSON vLLM, SGLang and XGrammar take): free text with tagged sections")
    group.add_argument("--type", dest="python_type", metavar="MODULE:CLASS",
                       help="a Python type (a dataclass, a pydantic model, ...), imported from the current folder or sys.path")
    parser.add_argument("--syntax", choices=("json", "python"), default="json",
                        help="with --type: the value as JSON (default) or as a Python constructor call")
    parser.add_argument("--characters", metavar="SET",
                        help="restrict every generated character: ascii, latin, hangul, cjk or a class like '[a-z ]'")
    parser.add_argument("--canonical", action="store_true",
                        help="only the tokenizer's own tokenizations of the text (canonical BPE; needs the "
                             "tokenizer: byte-level BPE like GPT-2, Llama 3, Qwen2, or SentencePiece BPE "
                             "like Gemma 3, Llama 2, Mistral)")
    parser.add_argument("--token-filters", dest="token_filters", metavar="NAMES",
                        help="token filters, comma-separated: byte_fallback (<0xNN> tokens only for characters "
                             "with no other spelling), isolated_space (no lone space token before a token it "
                             "would fuse with); implied by --canonical; needs the tokenizer")


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise CliError(f"the {what} file {path!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read the {what} file {path!r}: {exc}") from None


def _token_filters(text: str | None) -> tuple[str, ...]:
    """``--token-filters a,b`` as checked names, or CliError naming the unknown one."""
    if text is None:
        return ()
    from ..errors import InvalidArgument
    from ..vocab.token_filters import check_filter_names

    try:
        return check_filter_names([name.strip() for name in text.split(",") if name.strip()])
    except InvalidArgument as exc:
        raise CliError(f"--token-filters: {exc}") from None


def spec_from_args(args: argparse.Namespace) -> Spec:
    spec = _spec_from_args(args)
    filters = _token_filters(getattr(args, "token_filters", None))
    return dataclasses.replace(spec, token_filters=filters) if filters else spec


def _spec_from_args(args: argparse.Namespace) -> Spec:
    characters = getattr(args, "characters", None)
    canonical = bool(getattr(args, "canonical", False))
    if args.regex is not None:
        return Spec("regex", args.regex, "--regex", characters, canonical=canonical)
    if args.grammar is not None:
        return Spec("grammar", _read(args.grammar, "grammar"), args.grammar, characters, canonical=canonical)
    if args.gbnf is not None:
        return Spec("gbnf", _read(args.gbnf, "GBNF grammar"), args.gbnf, characters, canonical=canonical)
    if getattr(args, "python_type", None) is not None:
        load_type(args.python_type)  # (fails fast: before any vocabulary or model is read)
        return Spec("type", args.python_type, "--type", characters, args.syntax, canonical)
    for kind, path, what in (("schema", args.schema, "schema"),
                             ("structural_tag", getattr(args, "structural_tag", None), "structural tag")):
        if path is not None:
            text = _read(path, what)
            try:
                json.loads(text)
            except ValueError as exc:
                raise CliError(f"the {what} file {path!r} is not JSON: {exc}") from None
            return Spec(kind, text, path, characters, canonical=canonical)
    return Spec("json", "", "--json", characters, canonical=canonical)


def load_type(name: str) -> Any:
    """The type ``module:Class`` names (the current folder is searched first)."""
    import importlib
    import os
    import sys

    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise CliError(f"--type wants MODULE:CLASS (such as models:Order), got {name!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # (any error of the user's module: reported in one line)
        raise CliError(f"cannot import {module_name!r} for --type: {type(exc).__name__}: {exc}") from None
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise CliError(f"{module_name!r} has no {attribute!r} (--type {name})")
        found = getattr(found, part)
    return found


def compile_spec(spec: Spec, vocab, canonical: bool | None = None) -> tuple[Any, float]:
    """(constraint, seconds to compile); ``canonical=False`` drops the spec's canonical mode
    and token filters (a check over the byte vocabulary has no tokenizer for them)."""
    import tokamata

    start = time.perf_counter()
    chars, canon = spec.characters, spec.canonical if canonical is None else canonical
    filters = spec.token_filters if canonical is None else ()
    if spec.kind == "regex":
        constraint = tokamata.compile_regex(spec.text, vocab, characters=chars, canonical=canon, token_filters=filters)
    elif spec.kind == "grammar":
        constraint = tokamata.compile_grammar(spec.text, vocab, characters=chars, canonical=canon, token_filters=filters)
    elif spec.kind == "gbnf":
        constraint = tokamata.compile_gbnf(spec.text, vocab, characters=chars, canonical=canon, token_filters=filters)
    elif spec.kind == "schema":
        constraint = tokamata.compile_json_schema(spec.text, vocab, characters=chars, canonical=canon, token_filters=filters)
    elif spec.kind == "structural_tag":
        constraint = tokamata.compile_structural_tag(spec.text, vocab, characters=chars, canonical=canon, token_filters=filters)
    elif spec.kind == "type":
        constraint = tokamata.compile_type(load_type(spec.text), vocab, syntax=spec.syntax, characters=chars,
                                           canonical=canon, token_filters=filters)
    else:
        constraint = tokamata.compile_json(vocab, characters=chars, canonical=canon, token_filters=filters)
    return constraint, time.perf_counter() - start


def byte_vocabulary_for_checks():
    """The 256 single bytes and an EOS: enough to compile a constraint for its checks."""
    import tokamata

    return tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def validate(spec: Spec, text: str) -> bool | None:
    """Whether ``text`` is in the constraint's language, by an independent validator (None:
    there is none for this kind). A type's text is read back into an instance of the type
    (``Constraint.parse``, which pydantic models validate with pydantic itself)."""
    if spec.kind == "type":
        import tokamata

        constraint = tokamata.compile_type(load_type(spec.text), byte_vocabulary_for_checks(), syntax=spec.syntax)
        try:
            constraint.parse(text)
        except tokamata.ParseError:
            return False
        return True
    if spec.kind == "regex":
        return re.fullmatch(spec.text, text) is not None
    if spec.kind in ("json", "schema"):
        try:
            value = json.loads(text)
        except ValueError:
            return False
        if spec.kind == "json":
            return True
        try:
            import jsonschema
        except ImportError:
            return None
        try:
            jsonschema.validate(value, json.loads(spec.text))
        except jsonschema.ValidationError:
            return False
        return True
    if spec.kind == "grammar":
        try:
            import lark
        except ImportError:
            return None
        try:  # (tokamata's extensions, such as %json or special tokens, are not lark's)
            parser = lark.Lark(spec.text, parser="earley", lexer="dynamic_complete")
        except lark.exceptions.LarkError:
            return None
        try:
            parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True
    return None
