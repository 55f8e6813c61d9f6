"""The front doors: text (a regex, a Lark or GBNF grammar, a JSON Schema) -> front end ->
grammar IR -> the one :class:`~tokamata.Constraint`.

Invariants:
- Every front end lowers its input to grammar IR (a regex is the one-terminal grammar) and
  raises every error about the text here, before any matcher exists: :class:`InvalidSyntax`
  and :class:`Unsupported` with where they are (regex span, grammar line and column, JSON
  pointer). Errors that depend on how far decoding goes come from the matcher call that
  reaches them, as :class:`LimitExceeded`.
- Arguments are checked first (:class:`InvalidArgument` naming the argument): limits,
  vocabulary, text types, ``start`` (a str), ``registry`` (a mapping or ``None``),
  ``approximate`` (a collection of str, not a lone str).
- JSON front doors (``compile_json``, ``compile_json_schema``) take ``spelling``:
  ``"natural"`` (the default: one spelling per value, :mod:`.syntax.json_spelling`, reported
  by ``constraint.report()``) or ``"any"`` (every RFC 8259 spelling); anything else is
  :class:`InvalidArgument` naming both.
- Each compile runs under one deadline (:mod:`.deadline`, ``Limits.max_compile_seconds``)
  from the call on: front end, grammar passes, and the lexer's states, then and later.
- Each front door records how it was called as the constraint's
  :class:`~tokamata.constraint.Recipe` (kind, spec, options, canonical and hashable), and
  :func:`build` runs the front door a recipe names: unpickling a constraint and
  :class:`tokamata.ConstraintCache` compile through it, so both give what the call gave.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Hashable, Union

from .automata import charset as cs
from .automata import derivatives as d
from .caches import clear_caches
from .constraint import Constraint, Recipe, register_builder
from .deadline import compile_deadline
from .errors import InvalidArgument, LimitExceeded, TokamataError
from .grammar.characters import restrict_characters
from .grammar.ir import Grammar, check_grammar, lexeme_grammar
from .limits import DEFAULT_LIMITS, Limits
from .syntax.json import json_grammar, whitespace_bound
from .syntax.json_spelling import NATURAL_REPORT, check_spelling
from .syntax.regex import Chars, parse_regex
from .syntax.regex_lower import regex_grammar
from .vocab.token_filters import check_filter_names

#: the ``characters=`` argument: a named set, a one-character regex, or a collection of them
Characters = Union[str, Iterable[str], None]
#: the ``token_filters=`` argument: names of :data:`~tokamata.vocab.token_filters.FILTER_NAMES`
TokenFilters = Union[Iterable[str], None]

__all__ = ["compile_regex", "compile_grammar", "compile_gbnf", "compile_json", "compile_json_schema",
           "compile_grammar_ir", "compile_choice", "compile_type", "dumps", "clear_caches", "recipe", "build"]


def _check_vocab(vocab) -> None:
    if not hasattr(vocab, "token_bytes") or not hasattr(vocab, "eos_token_ids"):
        raise InvalidArgument(f"vocab must be a tokamata.Vocabulary, got {type(vocab).__name__}")


def _constraint(grammar: Grammar, vocab, limits: Limits, description: str,
                characters: tuple[cs.CharSet, str] | None = None, canonical: bool = False,
                token_filters: tuple[str, ...] = (), **details: Any) -> Constraint:
    _check_vocab(vocab)
    filters: tuple[str, ...] = ()
    if characters is not None:
        allowed, spelled = characters
        grammar = restrict_characters(grammar, allowed, limits, spelled, vocab.token_bytes)
        filters = (f"characters={spelled}",)
    if canonical:
        filters += ("canonical=True",)
    if token_filters:
        filters += (f"token_filters={list(token_filters)!r}",)
    return Constraint(check_grammar(grammar, limits), vocab, limits, description, filters=filters,
                      canonical=canonical, token_filters=token_filters, **details)


def _canonical(canonical) -> bool:
    """The ``canonical=`` argument (a bool), or :class:`InvalidArgument`."""
    if not isinstance(canonical, bool):
        raise InvalidArgument(f"canonical must be True or False, got {type(canonical).__name__} {canonical!r:.40}")
    return canonical


def _characters(characters: Characters) -> tuple[cs.CharSet, str] | None:
    """The ``characters=`` argument as (set, how to name it): ``None``, a named set
    (:data:`~tokamata.automata.charset.NAMED_SETS`), a one-character regex (a class such as
    ``"[a-z ]"`` or ``"\\w"``), or a collection of those (their union)."""
    if characters is None:
        return None
    items = [characters] if isinstance(characters, str) else characters
    if not isinstance(items, Iterable) or isinstance(items, (bytes, Mapping)):
        raise InvalidArgument(f"characters must be a named set, a regex character class or a list of them, "
                              f"got {type(characters).__name__}")
    items = list(items)
    if not items:
        raise InvalidArgument("characters must name at least one set (got an empty collection)")
    sets = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidArgument(f"characters must hold str items, got {type(item).__name__} {item!r:.40}")
        named = cs.NAMED_SETS.get(item)
        if named is not None:
            sets.append(named)
            continue
        try:
            node = parse_regex(item, DEFAULT_LIMITS)
        except TokamataError:
            node = None
        if not isinstance(node, Chars):
            raise InvalidArgument(f"characters: {item!r} is neither a named set ({', '.join(sorted(cs.NAMED_SETS))}) "
                                  f"nor a regex that matches one character (such as '[a-z ]')")
        sets.append(node.charset)
    allowed = cs.union(*sets)
    if not allowed:
        raise InvalidArgument(f"characters={characters!r} allows no character")
    return allowed, repr(characters) if isinstance(characters, str) else repr(items)


def compile_regex(pattern: str, vocab, limits: Limits | None = None, *, characters: Characters = None,
                  canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a Python ``re`` pattern; the whole output must match it (full match).

    Raises :class:`InvalidSyntax` for malformed patterns, :class:`Unsupported` for
    non-regular features (with their span), :class:`LimitExceeded` for blow-ups.

    ``characters`` (every compile function has it) restricts every generated character to a
    set: a named set (``"ascii"``, ``"latin"``, ``"hangul"``, ``"cjk"``), a regex matching
    one character (``"[a-z ]"``) or a list of those (:mod:`tokamata.grammar.characters`).

    ``canonical=True`` (every compile function has it) allows only token sequences the
    tokenizer itself would produce: a sequence is allowed while some continuation makes it
    exactly the tokenizer's encoding (``add_special_tokens=False``) of a text of the
    language, and EOS when it is that encoding already (:mod:`tokamata.canonical_core`).
    Byte-level BPE (GPT-2, Llama 3, Qwen 2) and SentencePiece-style BPE with byte fallback
    (Gemma 3, Llama 2, Mistral; the encoding of the text as a continuation: no ``▁`` added
    before it); anything else (Unigram, no merges) raises :class:`Unsupported` naming it.

    ``token_filters`` (every compile function has it) names token-level filters composed into
    the matcher's filter state (:mod:`tokamata.vocab.token_filters`): ``"byte_fallback"``
    (``<0xNN>`` tokens only for characters with no other spelling) and ``"isolated_space"``
    (a lone space token never before a token it would have fused with). ``canonical=True``
    implies both. An unknown name raises :class:`InvalidArgument`.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    >>> m = tokamata.compile_regex("a+b", vocab).matcher()
    >>> m.allowed_tokens().tolist()
    [0, 2]
    >>> tokamata.compile_regex("[ab]+", vocab, characters="[a]").matcher().allowed_tokens().tolist()
    [0]
    """
    limits = _limits(limits)
    _check_vocab(vocab)
    allowed = _characters(characters)
    with compile_deadline(limits):
        tree = parse_regex(_text(pattern, "pattern"), limits)
        grammar = regex_grammar(tree, pattern, vocab, limits)
        return _constraint(grammar, vocab, limits, "regex", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters), source=pattern,
                           recipe=_recipe("regex", pattern, limits=limits, characters=characters, canonical=canonical, token_filters=token_filters))


def compile_choice(choices, vocab, *, limits: Limits | None = None, characters: Characters = None,
                   canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Exactly one of ``choices`` (a list of distinct strs): the alternation of their literal
    UTF-8 spellings, with exact masks. An empty list, a duplicate or a non-str item is an
    :class:`InvalidArgument` naming it; their total length counts against
    ``Limits.max_pattern_length``.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"Red", b"Re", b"d", b"Green", None], eos_token_ids=[4])
    >>> m = tokamata.compile_choice(["Red", "Green"], vocab).matcher()
    >>> m.allowed_tokens().tolist()
    [0, 1, 3]
    """
    limits = _limits(limits)
    _check_vocab(vocab)
    allowed = _characters(characters)
    if isinstance(choices, (str, bytes)) or not isinstance(choices, Iterable):
        raise InvalidArgument(f"choices must be a list of str, got {type(choices).__name__}")
    items = list(choices)
    if not items:
        raise InvalidArgument("choices must hold at least one string (got an empty list)")
    seen: dict[str, int] = {}
    total = 0
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidArgument(f"choices[{index}] must be a str, got {type(item).__name__} {item!r:.40}")
        if item in seen:
            raise InvalidArgument(f"choices[{index}] {item!r:.40} repeats choices[{seen[item]}]")
        seen[item] = index
        total += len(item)
        if total > limits.max_pattern_length:
            raise LimitExceeded("max_pattern_length", total, limits.max_pattern_length)
    with compile_deadline(limits):
        options = []
        for index, item in enumerate(items):
            try:
                data = item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument(f"choices[{index}] has a lone surrogate (no UTF-8 spelling)") from None
            options.append(d.concat_all(d.byte_set(1 << b) for b in data))
        return _constraint(lexeme_grammar("CHOICE", d.alternation(*options)), vocab, limits, "choice", allowed,
                           canonical=_canonical(canonical), token_filters=check_filter_names(token_filters),
                           source=None, recipe=_recipe("choice", items, limits=limits, characters=characters, canonical=canonical, token_filters=token_filters))


def compile_grammar_ir(grammar: Grammar, vocab, *, limits: Limits | None = None,
                       description: str = "grammar", canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a grammar given as IR (what every front end produces)."""
    limits = _limits(limits)
    if not isinstance(grammar, Grammar):
        raise InvalidArgument(f"grammar must be a tokamata Grammar, got {type(grammar).__name__}")
    with compile_deadline(limits):
        return _constraint(grammar, vocab, limits, description, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters))


def _limits(limits: Limits | None) -> Limits:
    limits = DEFAULT_LIMITS if limits is None else limits
    if not isinstance(limits, Limits):
        raise InvalidArgument(f"limits must be a tokamata.Limits, got {type(limits).__name__}")
    return limits


def _text(text, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidArgument(f"the {what} must be a str, got {type(text).__name__}")
    return text


def _start(start) -> str:
    if not isinstance(start, str):
        raise InvalidArgument(f"start must be a str (a rule name), got {type(start).__name__} {start!r:.40}")
    return start


def _registry(registry) -> Mapping[str, Any] | None:
    if registry is not None and not isinstance(registry, Mapping):
        raise InvalidArgument(f"registry must be a mapping from URI to schema, got {type(registry).__name__}")
    return registry


def _approximate(approximate) -> frozenset[str]:
    if isinstance(approximate, str) or not isinstance(approximate, Iterable):
        raise InvalidArgument(f"approximate must be a collection of names (such as {{'format'}}), got "
                              f"{type(approximate).__name__} {approximate!r:.40}")
    names = frozenset(approximate) if not isinstance(approximate, frozenset) else approximate
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgument(f"approximate must hold names (str), got {type(name).__name__} {name!r:.40}")
    return names


def compile_grammar(text: str, vocab, *, start: str = "start", limits: Limits | None = None,
                    registry: Mapping[str, Any] | None = None, characters: Characters = None,
                    canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a Lark-style grammar (seed 001's dialect); the whole output must be a sentence
    of ``start``. Lexemes may end wherever their terminal matches, as with lark's Earley
    parser and ``lexer="dynamic_complete"``. ``registry`` serves the ``$ref``s of ``%json``
    schemas into other documents, as for :func:`compile_json_schema` (nothing is fetched).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", b"b", b"ab", None], eos_token_ids=[3])
    >>> m = tokamata.compile_grammar('start: "a"+ "b"', vocab).matcher()
    >>> m.allowed_tokens().tolist()
    [0, 2]
    """
    from .syntax.lark import parse_lark

    limits = _limits(limits)
    allowed = _characters(characters)
    with compile_deadline(limits):
        report: list = []  # (the %json schemas' approximations)
        grammar = parse_lark(_text(text, "grammar"), vocab, limits, start=_start(start), registry=_registry(registry),
                             report=report)
        return _constraint(grammar, vocab, limits, "lark grammar", allowed, canonical=_canonical(canonical),
                           token_filters=check_filter_names(token_filters), source=text,
                           approximations=tuple(report),
                           recipe=_recipe("grammar", text, start=start, limits=limits, registry=registry,
                                          characters=characters, canonical=canonical, token_filters=token_filters))


def compile_gbnf(text: str, vocab, *, start: str = "root", limits: Limits | None = None,
                 characters: Characters = None, canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a llama.cpp GBNF grammar; the whole output must be a sentence of ``start``."""
    from .syntax.gbnf import parse_gbnf

    limits = _limits(limits)
    allowed = _characters(characters)
    with compile_deadline(limits):
        grammar = parse_gbnf(_text(text, "grammar"), vocab, limits, start=_start(start))
        return _constraint(grammar, vocab, limits, "GBNF grammar", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters), source=text,
                           recipe=_recipe("gbnf", text, start=start, limits=limits, characters=characters, canonical=canonical, token_filters=token_filters))


def compile_json(vocab, *, whitespace="compact", spelling: str = "natural", limits: Limits | None = None,
                 characters: Characters = None, canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Any JSON value (RFC 8259). ``whitespace``: ``"compact"`` (none, the default),
    ``"flexible"`` (up to 20 whitespace characters wherever JSON allows whitespace) or an int
    bound per place. ``spelling``: ``"natural"`` (the default: one spelling per value, as
    ``json.dumps(value, ensure_ascii=False)`` writes strings, numbers in shortest plain decimal;
    see :mod:`tokamata.syntax.json_spelling`) or ``"any"`` (every RFC 8259 spelling).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"[", b"]", b"1", b".0", b"e1", None], eos_token_ids=[5])
    >>> m = tokamata.compile_json(vocab).matcher()
    >>> m.consume(0), m.consume(2), m.consume(3), m.allowed_tokens().tolist()  # [1.0 needs more
    (True, True, True, [2])
    >>> m = tokamata.compile_json(vocab, spelling="any").matcher()
    >>> m.consume(0), m.consume(2), m.consume(3), m.allowed_tokens().tolist()
    (True, True, True, [1, 2, 4])
    """
    limits = _limits(limits)
    bound = whitespace_bound(whitespace)
    allowed = _characters(characters)
    spelling = check_spelling(spelling)
    with compile_deadline(limits):
        return _constraint(json_grammar(limits, bound, spelling), vocab, limits,
                           f"JSON, whitespace={whitespace!r}, spelling={spelling!r}", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters),
                           approximations=_spelling_report(spelling),
                           recipe=_recipe("json", None, whitespace=whitespace, spelling=spelling, limits=limits,
                                          characters=characters, canonical=canonical, token_filters=token_filters))


def _spelling_report(spelling: str) -> tuple:
    from .syntax.json_schema import Approximation

    return (Approximation("spelling", "", NATURAL_REPORT),) if spelling == "natural" else ()


def compile_json_schema(schema, vocab, *, whitespace: str = "compact", spelling: str = "natural",
                        strict: bool = False, approximate=frozenset(), ignore_unknown_formats: bool = False,
                        property_order: str = "schema", indent: int = 2, max_whitespace: int = 20,
                        limits: Limits | None = None,
                        registry: Mapping[str, Any] | None = None, characters: Characters = None,
                        canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a JSON Schema (a dict, a bool, or its JSON text): the output must be a JSON text
    valid against it. Keywords that cannot be enforced exactly raise :class:`Unsupported` with
    their JSON pointer unless named in ``approximate`` (then ``constraint.report()`` lists
    them); a malformed schema raises :class:`SchemaError`.

    ``whitespace``: ``"compact"`` (none), ``"flexible"`` (up to ``max_whitespace`` characters
    wherever JSON allows) or ``"pretty"`` (``indent`` spaces per level). ``spelling``:
    ``"natural"`` (the default: one spelling per value, as for :func:`compile_json`; every
    value the schema allows keeps its natural spelling) or ``"any"`` (every RFC 8259 spelling,
    numbers in plain notation where bounds apply). ``strict=True`` makes
    an absent ``additionalProperties`` false. ``property_order``: ``"schema"`` or ``"any"``.
    ``registry``: a mapping from absolute URI to schema document, for ``$ref`` to other
    documents (nothing is ever fetched; an unregistered one raises :class:`Unsupported`).

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"1", b"2", b"-", None], eos_token_ids=[3])
    >>> c = tokamata.compile_json_schema({"type": "integer", "minimum": 1}, vocab)
    >>> c.matcher().allowed_tokens().tolist()
    [0, 1]
    >>> c.report()[0].startswith("spelling at /: natural")
    True
    >>> positive = {"https://example.com/positive.json": {"type": "integer", "minimum": 1}}
    >>> schema = {"$ref": "https://example.com/positive.json"}
    >>> m = tokamata.compile_json_schema(schema, vocab, registry=positive).matcher()
    >>> m.allowed_tokens().tolist()
    [0, 1]
    """
    from .syntax.json_schema import schema_to_grammar

    limits = _limits(limits)
    allowed = _characters(characters)
    with compile_deadline(limits):
        grammar, report = schema_to_grammar(
            schema, limits, whitespace=whitespace, spelling=check_spelling(spelling), strict=strict,
            approximate=_approximate(approximate),
            ignore_unknown_formats=ignore_unknown_formats, property_order=property_order, indent=indent,
            max_whitespace=max_whitespace, registry=_registry(registry))
        recipe = _recipe("json_schema", schema, whitespace=whitespace, spelling=spelling, strict=strict,
                         approximate=approximate,
                         ignore_unknown_formats=ignore_unknown_formats, property_order=property_order,
                         indent=indent, max_whitespace=max_whitespace, limits=limits, registry=registry,
                         characters=characters, canonical=canonical, token_filters=token_filters)
        return _constraint(grammar, vocab, limits, "JSON Schema", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters), approximations=tuple(report),
                           recipe=recipe)



def compile_structural_tag(spec, vocab, *, whitespace: str = "compact", spelling: str = "natural",
                           max_whitespace: int = 20, limits: Limits | None = None,
                           characters: Characters = None, canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a structural tag (the JSON object vLLM, SGLang and XGrammar accept as
    ``{"type": "structural_tag", "format": {...}}``, the legacy ``{"structures": [...],
    "triggers": [...]}``, or a bare format; a dict or its JSON text): free text in which each
    tagged section (a tool call, an answer after ``</think>``) is constrained exactly. JSON
    Schema contents use ``whitespace``, ``max_whitespace`` and ``spelling`` as
    :func:`compile_json_schema` does (a format's own ``max_whitespace_cnt`` wins).
    See :mod:`tokamata.syntax.structural_tag` for what each format means; errors carry the
    ``pointer`` into ``spec``.

    >>> import tokamata
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"hi ", b"<f>", b"1", b"</f>", None], eos_token_ids=[4])
    >>> tag = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f>"],
    ...        "tags": [{"begin": "<f>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
    ...                  "end": "</f>"}]}}
    >>> m = tokamata.compile_structural_tag(tag, vocab).matcher()
    >>> m.consume_many([0, 1]), m.allowed_tokens().tolist()
    (2, [2])
    """
    from .syntax.structural_tag import structural_tag_grammar

    limits = _limits(limits)
    allowed = _characters(characters)
    with compile_deadline(limits):
        grammar, report = structural_tag_grammar(spec, vocab, limits, whitespace=whitespace,
                                                 spelling=check_spelling(spelling), max_whitespace=max_whitespace)
        return _constraint(grammar, vocab, limits, "structural tag", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters),
                           approximations=report, source=spec if isinstance(spec, str) else None,
                           recipe=_recipe("structural_tag", spec, whitespace=whitespace, spelling=spelling,
                                          max_whitespace=max_whitespace, limits=limits, characters=characters,
                                          canonical=canonical, token_filters=token_filters))


# ------------------------------------------------------------------ recipes

_KINDS = ("regex", "grammar", "gbnf", "json", "json_schema", "choice", "structural_tag")


@dataclass(frozen=True)
class JsonText:
    """A mapping in a recipe (a schema, a registry): its JSON text, keys in their order."""

    text: str


def _hashable(value: Any) -> Hashable:
    """An option or spec value in the recipe's canonical form: mappings (schemas, registries)
    as JSON text with their key order, sets as sorted tuples, other collections as tuples;
    ``TypeError``/``ValueError`` when it has none (then the constraint gets no recipe)."""
    if value is None or isinstance(value, (str, bytes, bool, int, float, Limits)):
        return value
    if isinstance(value, Mapping):
        return JsonText(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    if isinstance(value, Iterable):
        return tuple(_hashable(item) for item in value)
    raise TypeError(f"no canonical form for {type(value).__name__}")


def _recipe(kind: str, spec: Any, **options: Any) -> Recipe | None:
    try:
        return Recipe(kind, _hashable(spec), tuple((name, _hashable(value)) for name, value in options.items()))
    except (TypeError, ValueError, RecursionError):
        return None


def recipe(kind: str, spec: Any = None, **options: Any) -> Recipe:
    """The recipe of ``kind`` (``"regex"``, ``"grammar"``, ``"gbnf"``, ``"json"``,
    ``"json_schema"``, ``"choice"``, ``"structural_tag"``) with this spec and these options, as the front door of that kind records
    it when called with them (options left out take the front door's defaults). Raises
    :class:`InvalidArgument` for an unknown kind or option, or a spec with no canonical form.

    >>> import tokamata
    >>> from tokamata.compile import recipe
    >>> vocab = tokamata.Vocabulary.from_token_bytes([b"a", None], eos_token_ids=[1])
    >>> recipe("regex", "a+") == tokamata.compile_regex("a+", vocab).recipe
    True
    """
    import inspect

    if kind not in _KINDS:
        raise InvalidArgument(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    door = _DOORS[kind]
    parameters = [p for p in inspect.signature(door).parameters.values() if p.name != "vocab"]
    names = [p.name for p in parameters]
    if kind != "json":
        names = names[1:]  # (the spec)
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InvalidArgument(f"unknown option(s) for {kind}: {', '.join(unknown)} (known: {', '.join(names)})")
    values = {p.name: p.default for p in parameters if p.name in names}
    values.update(options)
    if "limits" in values:
        values["limits"] = _limits(values["limits"])
    made = _recipe(kind, spec, **values)
    if made is None:
        raise InvalidArgument(f"the {kind} spec or an option has no canonical form (not JSON-serializable)")
    return made


def _plain(value: Hashable) -> Any:
    """The argument a canonical recipe value stands for."""
    if isinstance(value, JsonText):
        return json.loads(value.text)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def build(made: Recipe, vocab) -> Constraint:
    """Run the front door ``made`` names over ``vocab`` (what unpickling a constraint does)."""
    if not isinstance(made, Recipe) or made.kind not in _KINDS:
        raise InvalidArgument(f"not a recipe of a front door: {made!r:.80}")
    options = {name: _plain(value) for name, value in made.options}
    if made.kind == "json":
        return compile_json(vocab, **options)
    return _DOORS[made.kind](_plain(made.spec), vocab, **options)



_DOORS: dict[str, Callable[..., Constraint]] = {
    "regex": compile_regex, "grammar": compile_grammar, "gbnf": compile_gbnf, "json": compile_json,
    "json_schema": compile_json_schema, "choice": compile_choice, "structural_tag": compile_structural_tag}
register_builder(build)


_SYNTAXES = ("json", "python")


def _syntax(syntax) -> str:
    if syntax not in _SYNTAXES:
        raise InvalidArgument(f"syntax must be one of {_SYNTAXES}, got {syntax!r:.40}")
    return syntax


def compile_type(tp: Any, vocab, *, syntax: str = "json", whitespace: str = "compact",
                 approximate=frozenset(), indent: int = 2, max_whitespace: int = 20,
                 limits: Limits | None = None, characters: Characters = None,
                 canonical: bool = False, token_filters: TokenFilters = None) -> Constraint:
    """Compile a Python type (a dataclass, a pydantic model, a ``TypedDict``, a
    ``NamedTuple``, an enum, a ``Literal``, a union, a container of these, ...: see
    :mod:`tokamata.syntax.types`): the output must be a value of the type written in
    ``syntax``, and ``constraint.parse(text)`` returns that value.

    ``syntax="json"``: JSON text valid against the type's JSON Schema (compiled by
    :func:`compile_json_schema`, every bound exact; ``whitespace``, ``indent`` and
    ``max_whitespace`` as there). ``syntax="python"``: a Python expression, a constructor
    call such as ``Point(x=1, y=[2, 3])`` (see :mod:`tokamata.syntax.types.python_grammar`;
    ``whitespace="compact"`` only: ``", "`` after commas and ``": "`` after dict keys, no
    other space). Anything the syntax cannot bound exactly raises :class:`Unsupported`
    unless its name is in ``approximate`` (``"uniqueItems"``: sets may repeat an item).
    Errors about the type say where in it (``path``, as ``Order.items[].sku``).
    ``characters`` filters as for every compile function. The constraint has no recipe (a
    type is not data), so it does not pickle; compile the type again in the other process.
    :func:`dumps` writes a value as text this constraint accepts.

    >>> import dataclasses, tokamata
    >>> @dataclasses.dataclass
    ... class Point:
    ...     x: int
    ...     y: list[int]
    >>> vocab = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [None],
    ...                                              eos_token_ids=[128])
    >>> c = tokamata.compile_type(Point, vocab)
    >>> tokamata.dumps(Point(1, [2, 3]), Point)
    '{"x":1,"y":[2,3]}'
    >>> c.parse('{"x":1,"y":[2,3]}')
    Point(x=1, y=[2, 3])
    >>> m = c.matcher()
    >>> m.consume_many(list(b'{"x":1,"y":[2,3]}')), m.is_accepting()
    (17, True)
    """
    from .syntax.types import describe, parse_json, to_schema

    limits = _limits(limits)
    syntax = _syntax(syntax)
    approximate = _approximate(approximate)
    _check_vocab(vocab)
    allowed = _characters(characters)
    with compile_deadline(limits):
        node = describe(tp, limits)
        if syntax == "python":
            from .syntax.types.python_grammar import python_grammar
            from .syntax.types.python_text import parse_python

            if whitespace != "compact":
                raise InvalidArgument(f'syntax="python" takes whitespace="compact" only, got {whitespace!r:.40}')
            grammar = python_grammar(node, limits, approximate)
            return _constraint(grammar, vocab, limits, f"type {node.path} (Python)", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters),
                               source=node.path,
                               value_parser=lambda text: parse_python(text, node, limits))
        from .syntax.json_schema import schema_to_grammar

        pydantic = _has_pydantic(node)
        grammar, report = schema_to_grammar(to_schema(node), limits, whitespace=whitespace, strict=pydantic,
                                            approximate=approximate, indent=indent, max_whitespace=max_whitespace)
        return _constraint(grammar, vocab, limits, f"type {node.path} (JSON)", allowed, canonical=_canonical(canonical), token_filters=check_filter_names(token_filters),
                           approximations=tuple(report),
                           source=node.path, value_parser=lambda text: parse_json(text, node, whitespace == "compact"))


def _has_pydantic(node) -> bool:
    from .syntax.types.model import Record, walk_nodes

    return any(isinstance(r, Record) and r.kind == "pydantic" for r in walk_nodes(node))


def dumps(value: Any, tp: Any, *, syntax: str = "json", whitespace: str = "compact", indent: int = 2,
          limits: Limits | None = None) -> str:
    """``value`` (a value of the type ``tp``) as text that ``compile_type(tp, vocab,
    syntax=syntax, whitespace=whitespace)`` accepts and parses back to ``value``
    (``whitespace="pretty"``: JSON indented by ``indent``). Raises :class:`InvalidArgument`
    for a value it cannot write (not of the type, a non-finite number), with ``path``.

    >>> import tokamata
    >>> from typing import Literal
    >>> tokamata.dumps((1, "a"), tuple[int, Literal["a", "b"]], syntax="python")
    "(1, 'a')"
    """
    from .syntax.types import describe, dump_json

    limits = _limits(limits)
    node = describe(tp, limits)
    if _syntax(syntax) == "python":
        from .syntax.types.python_text import dump_python

        return dump_python(value, node)
    return dump_json(value, node, indent if whitespace == "pretty" else None)
