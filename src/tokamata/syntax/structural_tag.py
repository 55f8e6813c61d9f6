"""Structural tags -> grammar IR: free text in which tool calls and other tagged sections are
constrained exactly, in the JSON format vLLM, SGLang and XGrammar accept
(``{"type": "structural_tag", "format": {...}}``, or the legacy
``{"structures": [{"begin", "schema", "end"}], "triggers": [...]}``).

Invariants:
- Every format lowers through the one :class:`~tokamata.grammar.builder.GrammarBuilder` into a
  character-level grammar; JSON Schema contents are the JSON Schema front end's grammars
  embedded (with the compile's ``whitespace`` and ``spelling``), ``grammar`` contents are GBNF
  embedded, ``regex`` contents are byte-expression terminals. No parallel engine: the result is
  one grammar served by the one matcher core.
- Free text is valid UTF-8. ``any_text`` matches any text that contains none of its
  ``excludes``; as the content of a ``tag`` whose ``end`` is text, it is the text before the
  *first* occurrence of an end string, which then ends the tag.
- ``triggered_tags``: the free text runs up to the *first* occurrence of a trigger (free text
  never contains a trigger, nor an ``exclude``); from there one of the tags whose ``begin``
  starts with that trigger must follow, in full; after its ``end``, free text again.
  ``at_least_one`` asks for one tag or more, ``stop_after_first`` ends the output after the
  first tag. Every tag's ``begin`` starts with exactly one trigger (else :class:`InvalidSyntax`).
  ``dispatch`` is the same with each pattern followed by its format (the pattern is part of the
  free text, ``loop=False`` ends after the first dispatched format).
  ``token_triggered_tags`` and ``token_dispatch`` are the same over tokens: free text is any
  token but the trigger and excluded tokens (and EOS), tags begin with a trigger token.
- Tokens (``token``, ``exclude_token``, ``any_tokens``, a tag's ``begin``/``end`` given as a
  token) are token-set terminals: a token by id, or by text (a named special token, else every
  token spelled exactly so).
- What cannot be enforced exactly is refused with :class:`~tokamata.Unsupported` naming the
  field (``json_schema.style`` other than ``json``, ``any_order``, string ``excludes`` inside
  JSON, ``max_tokens`` on free text); a malformed spec is :class:`~tokamata.InvalidSyntax`.
  Every error carries ``pointer``: where in the spec (RFC 6901), continued by the schema's own
  pointer for an error inside an embedded JSON Schema.
- Nesting is bounded by ``Limits.max_nesting_depth``; size by the builder's symbol budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..automata import boolean
from ..automata import charset as cs
from ..automata import derivatives as d
from ..errors import InvalidSyntax, LimitExceeded, SchemaError, TokamataError, Unsupported
from ..grammar.builder import GrammarBuilder
from ..grammar.ir import Grammar
from ..limits import Limits

__all__ = ["structural_tag_grammar", "FORMAT_TYPES"]

#: the format ``type`` names this front end reads
FORMAT_TYPES = frozenset({
    "const_string", "json_schema", "any_text", "regex", "grammar", "sequence", "or", "tag", "triggered_tags",
    "tags_with_separator", "optional", "plus", "star", "repeat", "token", "exclude_token", "any_tokens",
    "dispatch", "token_triggered_tags", "token_dispatch", "qwen_xml_parameter"})

_ANY = d.utf8_char(cs.ANY)
_TEXT = d.repeat(_ANY, 0, d.UNBOUNDED)
_SOME_TEXT = d.repeat(_ANY, 1, d.UNBOUNDED)


def _escape(key: str | int) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _literal(text: str) -> d.Expr:
    return d.concat_all(d.byte_set(1 << b) for b in text.encode("utf-8"))


def _containing(strings: Sequence[str]) -> d.Expr:
    """Text containing one of ``strings`` somewhere."""
    return d.concat_all((_TEXT, d.alternation(*(_literal(s) for s in strings)), _TEXT))


def structural_tag_grammar(spec: Any, vocab: Any, limits: Limits, *, whitespace: str = "compact",
                           spelling: str = "natural", max_whitespace: int = 20) -> tuple[Grammar, tuple]:
    """The grammar of a structural tag (a dict or its JSON text) and the approximations its
    embedded JSON Schemas report.

    >>> g, _ = structural_tag_grammar({"type": "structural_tag", "format": {"type": "or", "elements": [
    ...     {"type": "const_string", "value": "yes"}, {"type": "const_string", "value": "no"}]}}, None, Limits())
    >>> sorted(t.name for t in g.terminals)
    ['"no"', '"yes"']
    """
    text = spec if isinstance(spec, str) else ""
    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except RecursionError:
            raise LimitExceeded("max_json_depth", "more than Python's recursion limit", limits.max_json_depth) from None
        except json.JSONDecodeError as error:
            raise InvalidSyntax(f"the structural tag is not valid JSON: {error.msg}", text=error.doc,
                                span=(error.pos, min(error.pos + 1, len(error.doc)))) from None
        except ValueError as error:
            raise InvalidSyntax(f"the structural tag is not valid JSON: {error}") from None
    lowering = _Lowering(vocab, limits, whitespace, spelling, max_whitespace, text)
    return lowering.top(spec)


class _Lowering:
    def __init__(self, vocab: Any, limits: Limits, whitespace: str, spelling: str, max_whitespace: int,
                 text: str) -> None:
        self.vocab = vocab
        self.max_whitespace = max_whitespace
        self.limits = limits
        self.whitespace = whitespace
        self.spelling = spelling
        self.builder = GrammarBuilder(text, limits, character_level=True)
        self.approximations: list = []
        self.embedded = 0

    # ------------------------------------------------------------------- the spec's shape

    def error(self, message: str, pointer: str) -> InvalidSyntax:
        return InvalidSyntax(message, pointer=pointer)

    def field(self, node: Mapping, key: str, kind: type | tuple, pointer: str, default: Any = ...) -> Any:
        if key not in node:
            if default is ...:
                raise self.error(f"missing field {key!r}", pointer)
            return default
        value = node[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int,))):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(f"{key!r} must be {names}, got {type(value).__name__}", f"{pointer}/{_escape(key)}")
        return value

    def strings(self, node: Mapping, key: str, pointer: str, *, default: Any = ...) -> list[str]:
        values = self.field(node, key, list, pointer, default)
        for i, value in enumerate(values):
            if not isinstance(value, str) or not value:
                raise self.error(f"{key}[{i}] must be a non-empty string", f"{pointer}/{_escape(key)}/{i}")
        return list(values)

    def top(self, spec: Any) -> tuple[Grammar, tuple]:
        if not isinstance(spec, Mapping):
            raise self.error(f"a structural tag is a JSON object, got {type(spec).__name__}", "")
        if "structures" in spec:  # the legacy form: triggered tags over JSON Schemas
            structures = self.field(spec, "structures", list, "")
            tags = []
            for i, s in enumerate(structures):
                where = f"/structures/{i}"
                if not isinstance(s, Mapping):
                    raise self.error("a structure is a JSON object", where)
                schema = s.get("schema", s.get("parameters"))
                if schema is None:
                    raise self.error("missing field 'schema'", where)
                tags.append({"type": "tag", "begin": self.field(s, "begin", str, where),
                             "content": {"type": "json_schema", "json_schema": schema},
                             "end": self.field(s, "end", str, where)})
            fmt: Any = {"type": "triggered_tags", "triggers": self.strings(spec, "triggers", ""), "tags": tags}
            pointer = ""
        elif "format" in spec:
            kind = spec.get("type", "structural_tag")
            if kind != "structural_tag":
                raise self.error(f"type must be 'structural_tag', got {kind!r}", "/type")
            fmt, pointer = spec["format"], "/format"
        else:
            fmt, pointer = spec, ""
        start = self.builder.nonterminal("start")
        self.builder.add_rule(start, self.format(fmt, pointer, 0))
        grammar = self.builder.build(start, lambda: self.error("the structural tag matches no text", pointer))
        return grammar, tuple(self.approximations)

    # ------------------------------------------------------------------------ formats

    def format(self, node: Any, pointer: str, depth: int) -> list[int]:
        """The symbols deriving ``node``'s language."""
        if depth > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", depth, self.limits.max_nesting_depth)
        if not isinstance(node, Mapping):
            raise self.error(f"a format is a JSON object, got {type(node).__name__}", pointer)
        kind = self.field(node, "type", str, pointer)
        if kind not in FORMAT_TYPES:
            raise self.error(f"unknown format type {kind!r}", f"{pointer}/type")
        return getattr(self, "f_" + kind)(node, pointer, depth + 1)

    def f_const_string(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        value = self.field(node, "value", str, pointer)
        return [self.text_terminal(value)] if value else []

    def text_symbols(self, name: str, expr: d.Expr) -> list[int]:
        """``expr`` as an optional terminal when it matches the empty text (terminals never do)."""
        if expr is d.EPSILON or expr is d.NOTHING:
            return []
        if not expr.nullable:
            return [self.builder.terminal(name, expr)]
        some = boolean.difference(expr, d.EPSILON, self.limits)
        return [self.builder.optional([self.builder.terminal(name, some)], "text", None)] if some is not d.NOTHING else []

    def text_terminal(self, value: str) -> int:
        return self.builder.terminal(json.dumps(value, ensure_ascii=False), _literal(value))

    def f_json_schema(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        from .json_schema import schema_to_grammar

        style = self.field(node, "style", str, pointer, "json")
        if style != "json":
            raise Unsupported("style", f"JSON Schema contents in the {style!r} style (only 'json' is enforced)",
                              pointer=f"{pointer}/style")
        if self.field(node, "any_order", bool, pointer, False):
            raise Unsupported("any_order", "properties in any order (tokamata keeps the schema's order)",
                              pointer=f"{pointer}/any_order")
        if self.field(node, "excludes", list, pointer, []):
            raise Unsupported("excludes", "substrings excluded from JSON strings", pointer=f"{pointer}/excludes")
        whitespace, max_whitespace = self.whitespace, self.max_whitespace
        cap = self.field(node, "max_whitespace_cnt", (int, type(None)), pointer, None)
        if cap is not None:
            if cap < 0:
                raise self.error("max_whitespace_cnt must be at least 0", f"{pointer}/max_whitespace_cnt")
            whitespace, max_whitespace = ("flexible", cap) if cap else ("compact", max_whitespace)
        if "json_schema" not in node:
            raise self.error("missing field 'json_schema'", pointer)
        where = f"{pointer}/json_schema"
        try:
            sub, report = schema_to_grammar(node["json_schema"], self.limits, whitespace=whitespace,
                                            spelling=self.spelling, max_whitespace=max_whitespace)
        except (SchemaError, Unsupported, InvalidSyntax) as error:
            raise _relocated(error, where) from None
        self.approximations.extend(report)
        self.embedded += 1
        return [self.builder.embed(sub, f"__json{self.embedded}_", None)]

    def f_qwen_xml_parameter(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        raise Unsupported("qwen_xml_parameter", "XML-style parameters are not enforced", pointer=pointer)

    def f_any_text(self, node: Mapping, pointer: str, depth: int, ends: Sequence[str] = ()) -> list[int]:
        excludes = self.strings(node, "excludes", pointer, default=[])
        if self.field(node, "max_tokens", (int, type(None)), pointer, None) is not None:
            raise Unsupported("max_tokens", "a token budget on free text", pointer=f"{pointer}/max_tokens")
        max_chars = self.field(node, "max_chars", (int, type(None)), pointer, None)
        if max_chars is not None and max_chars < 0:
            raise self.error("max_chars must be at least 0", f"{pointer}/max_chars")
        if ends and max_chars is None:  # the content of a tag: up to the first end string, which it includes
            expr = self.first_occurrence(ends, ends, excludes)
            return [self.builder.terminal(f"text before {ends[0]!r}", expr)]
        text = _TEXT if max_chars is None else d.repeat(_ANY, 0, max_chars)
        if excludes:
            text = boolean.difference(text, _containing(excludes), self.limits)
        symbols = self.text_symbols("any text", text)
        if ends:
            symbols.append(self.builder.group([[self.text_terminal(e)] for e in ends], "end", None))
        return symbols

    def first_occurrence(self, stops: Sequence[str], all_stops: Sequence[str], excludes: Sequence[str]) -> d.Expr:
        """Text without ``excludes`` up to and including the first occurrence of one of
        ``all_stops``, which is one of ``stops``."""
        free = boolean.difference(_TEXT, _containing(list(all_stops) + list(excludes)), self.limits)
        ended = d.concat(free, d.alternation(*(_literal(s) for s in stops)))
        early = d.concat_all((_TEXT, d.alternation(*(_literal(s) for s in all_stops)), _SOME_TEXT))
        return boolean.difference(ended, early, self.limits)

    def f_regex(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        from .regex import parse_regex
        from .regex_lower import lower

        pattern = self.field(node, "pattern", str, pointer)
        try:
            expr = lower(parse_regex(pattern, self.limits))
        except (InvalidSyntax, Unsupported) as error:
            raise _relocated(error, f"{pointer}/pattern") from None
        return self.text_symbols(f"/{pattern}/", expr)

    def f_grammar(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        from .gbnf import parse_gbnf

        text = self.field(node, "grammar", str, pointer)
        try:
            sub = parse_gbnf(text, self.vocab, self.limits)
        except (InvalidSyntax, Unsupported) as error:
            raise _relocated(error, f"{pointer}/grammar") from None
        self.embedded += 1
        return [self.builder.embed(sub, f"__gbnf{self.embedded}_", None)]

    def f_sequence(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        elements = self.field(node, "elements", list, pointer)
        out: list[int] = []
        for i, element in enumerate(elements):
            out.extend(self.format(element, f"{pointer}/elements/{i}", depth))
        return out

    def f_or(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        elements = self.field(node, "elements", list, pointer)
        if not elements:
            raise self.error("'or' needs at least one element", f"{pointer}/elements")
        options = [self.format(e, f"{pointer}/elements/{i}", depth) for i, e in enumerate(elements)]
        return [self.builder.group(options, "or", None)]

    def f_optional(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        return [self.builder.optional(self.content(node, pointer, depth), "optional", None)]

    def f_plus(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        return [self.builder.plus(self.content(node, pointer, depth), "plus", None)]

    def f_star(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        return [self.builder.star(self.content(node, pointer, depth), "star", None)]

    def f_repeat(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        low = self.field(node, "min", int, pointer)
        high = self.field(node, "max", int, pointer)
        if low < 0 or (high != -1 and high < low):
            raise self.error(f"repeat needs 0 <= min <= max (max -1: unbounded), got {low}, {high}", pointer)
        item = self.content(node, pointer, depth)
        return self.builder.repeat(item, low, d.UNBOUNDED if high == -1 else high, "repeat", None)

    def content(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        if "content" not in node:
            raise self.error("missing field 'content'", pointer)
        return self.format(node["content"], f"{pointer}/content", depth)

    # ---------------------------------------------------------------------------- tags

    def f_tag(self, node: Mapping, pointer: str, depth: int, begin_rest: str | None = None) -> list[int]:
        """``begin content end``; ``begin_rest`` is the part of a string ``begin`` after its
        trigger, when the trigger was already matched by the free text before it."""
        begin = self.field(node, "begin", (str, Mapping), pointer)
        end = self.field(node, "end", (str, list, Mapping), pointer)
        if isinstance(begin, Mapping):
            head = [self.token_symbol(begin, f"{pointer}/begin")]
        else:
            rest = begin if begin_rest is None else begin_rest
            head = [self.text_terminal(rest)] if rest else []
        if "content" not in node:
            raise self.error("missing field 'content'", pointer)
        content, where = node["content"], f"{pointer}/content"
        if isinstance(end, Mapping):
            return head + self.format(content, where, depth) + [self.token_symbol(end, f"{pointer}/end")]
        ends = [end] if isinstance(end, str) else self.strings(node, "end", pointer)
        if not ends:
            raise self.error("'end' needs at least one string", f"{pointer}/end")
        if isinstance(content, Mapping) and content.get("type") == "any_text":
            return head + self.f_any_text(content, where, depth + 1, ends=[e for e in ends if e] or ())
        tail = [self.builder.group([[self.text_terminal(e)] if e else [] for e in ends], "end", None)]
        return head + self.format(content, where, depth) + tail

    def tags(self, node: Mapping, key: str, pointer: str) -> list[Mapping]:
        tags = self.field(node, key, list, pointer)
        for i, tag in enumerate(tags):
            if not isinstance(tag, Mapping) or tag.get("type", "tag") != "tag":
                raise self.error("a tag is a JSON object of type 'tag'", f"{pointer}/{key}/{i}")
        return tags

    def f_triggered_tags(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        triggers = self.strings(node, "triggers", pointer)
        tags = self.tags(node, "tags", pointer)
        if not triggers or not tags:
            raise self.error("triggered_tags needs triggers and tags", pointer)
        rules: list[tuple[str, list[int]]] = []
        for i, tag in enumerate(tags):
            where = f"{pointer}/tags/{i}"
            begin = tag.get("begin")
            if not isinstance(begin, str):
                raise self.error("a triggered tag's begin is a string", f"{where}/begin")
            matched = [t for t in triggers if begin.startswith(t)]
            if len(matched) != 1:
                raise self.error(f"a tag's begin must start with exactly one trigger; {begin!r} starts with "
                                 f"{len(matched)}", f"{where}/begin")
            rules.append((matched[0], self.f_tag(tag, where, depth, begin_rest=begin[len(matched[0]):])))
        return self.dispatch_symbols(rules, triggers, node, pointer, loop=not self.flag(node, "stop_after_first",
                                                                                        pointer),
                                     at_least_one=self.flag(node, "at_least_one", pointer))

    def f_dispatch(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        pairs = self.field(node, "rules", list, pointer)
        rules: list[tuple[str, list[int]]] = []
        for i, pair in enumerate(pairs):
            where = f"{pointer}/rules/{i}"
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
                raise self.error("a dispatch rule is [pattern, format] with a non-empty pattern", where)
            rules.append((pair[0], self.format(pair[1], f"{where}/1", depth)))
        if not rules:
            raise self.error("dispatch needs rules", f"{pointer}/rules")
        return self.dispatch_symbols(rules, [p for p, _ in rules], node, pointer,
                                     loop=self.flag(node, "loop", pointer, True), at_least_one=False)

    def flag(self, node: Mapping, key: str, pointer: str, default: bool = False) -> bool:
        return self.field(node, key, bool, pointer, default)

    def dispatch_symbols(self, rules: list[tuple[str, list[int]]], triggers: Sequence[str], node: Mapping,
                         pointer: str, *, loop: bool, at_least_one: bool) -> list[int]:
        """Free text up to the first trigger, then that trigger's rule; repeated when ``loop``."""
        b = self.builder
        excludes = self.strings(node, "excludes", pointer, default=[])
        options = []
        for trigger in dict.fromkeys(triggers):
            lead = b.terminal(f"text then {trigger!r}", self.first_occurrence([trigger], triggers, excludes))
            for t, symbols in rules:
                if t == trigger:
                    options.append([lead] + symbols)
        one = b.group(options, "tagged", None)
        free = boolean.difference(_TEXT, _containing(list(triggers) + excludes), self.limits)
        tail = self.text_symbols("free text", free)
        if loop:
            return [b.plus([one], "tags", None) if at_least_one else b.star([one], "tags", None)] + tail
        return [one] if at_least_one else [b.group([[one], tail], "tag_or_text", None)]

    def f_tags_with_separator(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        tags = self.tags(node, "tags", pointer)
        separator = self.field(node, "separator", str, pointer)
        if not tags:
            raise self.error("tags_with_separator needs tags", f"{pointer}/tags")
        b = self.builder
        one = b.group([self.f_tag(t, f"{pointer}/tags/{i}", depth) for i, t in enumerate(tags)], "tag", None)
        if self.flag(node, "stop_after_first", pointer):
            return [one] if self.flag(node, "at_least_one", pointer) else [b.optional([one], "tag", None)]
        sep = [self.text_terminal(separator)] if separator else []
        many = [one, b.star(sep + [one], "tags", None)]
        return many if self.flag(node, "at_least_one", pointer) else [b.optional(many, "tags", None)]

    # -------------------------------------------------------------------------- tokens

    def token_ids(self, value: Any, pointer: str) -> tuple[int, ...]:
        vocab = self.vocab
        if vocab is None:
            raise self.error("token formats need a vocabulary", pointer)
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < len(vocab.token_bytes):
                raise self.error(f"token id {value} is outside the vocabulary (size {len(vocab.token_bytes)})",
                                 pointer)
            return (value,)
        if not isinstance(value, str) or not value:
            raise self.error("a token is an id or a non-empty string", pointer)
        named = vocab.special_token_names.get(value)
        if named:
            return tuple(named)
        data = value.encode("utf-8")
        found = tuple(i for i, t in enumerate(vocab.token_bytes) if t == data)
        if not found:
            raise self.error(f"no token of the vocabulary is spelled {value!r}", pointer)
        return found

    def token_symbol(self, node: Mapping, pointer: str) -> int:
        if node.get("type", "token") != "token":
            raise self.error("a token is a format of type 'token'", pointer)
        if "token" not in node:
            raise self.error("missing field 'token'", pointer)
        ids = self.token_ids(node["token"], f"{pointer}/token")
        return self.builder.special_terminal(f"<token {node['token']}>", ids)

    def f_token(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        return [self.token_symbol(node, pointer)]

    def others(self, excluded: Sequence[Any], pointer: str) -> tuple[int, ...]:
        """Every token but ``excluded`` and EOS."""
        out = set(range(len(self.vocab.token_bytes))) if self.vocab is not None else set()
        for i, value in enumerate(excluded):
            out -= set(self.token_ids(value, f"{pointer}/{i}"))
        return tuple(sorted(out - set(self.vocab.eos_token_ids)))

    def f_exclude_token(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        ids = self.others(self.field(node, "exclude_tokens", list, pointer, []), f"{pointer}/exclude_tokens")
        return [self.builder.special_terminal("<any token>", ids)]

    def f_any_tokens(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        ids = self.others(self.field(node, "exclude_tokens", list, pointer, []), f"{pointer}/exclude_tokens")
        cap = self.field(node, "max_tokens", (int, type(None)), pointer, None)
        one = [self.builder.special_terminal("<any token>", ids)]
        if cap is None:
            return [self.builder.star(one, "tokens", None)]
        if cap < 0:
            raise self.error("max_tokens must be at least 0", f"{pointer}/max_tokens")
        return self.builder.repeat(one, 0, cap, "tokens", None)

    def f_token_triggered_tags(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        triggers = self.field(node, "trigger_tokens", list, pointer)
        trigger_ids = [self.token_ids(t, f"{pointer}/trigger_tokens/{i}") for i, t in enumerate(triggers)]
        tags = self.tags(node, "tags", pointer)
        if not trigger_ids or not tags:
            raise self.error("token_triggered_tags needs trigger_tokens and tags", pointer)
        options = []
        for i, tag in enumerate(tags):
            begin = tag.get("begin")
            if not isinstance(begin, Mapping) or begin.get("type", "token") != "token":
                raise self.error("a token-triggered tag's begin is a token", f"{pointer}/tags/{i}/begin")
            ids = set(self.token_ids(begin.get("token"), f"{pointer}/tags/{i}/begin/token"))
            if not any(ids <= set(t) for t in trigger_ids):
                raise self.error("a token-triggered tag must begin with a trigger token", f"{pointer}/tags/{i}/begin")
            options.append(self.f_tag(tag, f"{pointer}/tags/{i}", depth))
        excluded = list(self.field(node, "exclude_tokens", list, pointer, [])) + list(triggers)
        return self.token_dispatch_symbols(options, excluded, pointer,
                                           loop=not self.flag(node, "stop_after_first", pointer),
                                           at_least_one=self.flag(node, "at_least_one", pointer))

    def f_token_dispatch(self, node: Mapping, pointer: str, depth: int) -> list[int]:
        pairs = self.field(node, "rules", list, pointer)
        options, patterns = [], []
        for i, pair in enumerate(pairs):
            where = f"{pointer}/rules/{i}"
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.error("a token_dispatch rule is [token, format]", where)
            ids = self.token_ids(pair[0], f"{where}/0")
            patterns.append(pair[0])
            options.append([self.builder.special_terminal(f"<token {pair[0]}>", ids)]
                           + self.format(pair[1], f"{where}/1", depth))
        if not options:
            raise self.error("token_dispatch needs rules", f"{pointer}/rules")
        excluded = list(self.field(node, "exclude_tokens", list, pointer, [])) + patterns
        return self.token_dispatch_symbols(options, excluded, pointer, loop=self.flag(node, "loop", pointer, True),
                                           at_least_one=False)

    def token_dispatch_symbols(self, options: list[list[int]], excluded: list, pointer: str, *, loop: bool,
                               at_least_one: bool) -> list[int]:
        b = self.builder
        free = [b.star([b.special_terminal("<free token>", self.others(excluded, pointer))], "free", None)]
        one = b.group([free + option for option in options], "tagged", None)
        if loop:
            return [b.plus([one], "tags", None) if at_least_one else b.star([one], "tags", None)] + free
        return [one] if at_least_one else [b.group([[one], free], "tag_or_text", None)]


def _relocated(error: TokamataError, where: str) -> TokamataError:
    """``error`` from an embedded front end, with ``pointer`` continued from ``where``."""
    inner = getattr(error, "pointer", None) or ""
    if inner.startswith("#"):
        inner = inner[1:]
    pointer = where + inner
    if isinstance(error, Unsupported):
        return Unsupported(error.keyword, error.reason, pointer=pointer, text=error.text, span=error.span,
                           line=error.line, column=error.column)
    return type(error)(error.message, pointer=pointer, text=error.text, span=error.span, line=error.line,
                       column=error.column)
