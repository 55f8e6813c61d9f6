"""Python ``re`` syntax -> character-level regex AST, for the regular subset.

Invariants:
- Syntax is validated by ``re.compile`` first, so exactly the patterns Python accepts are
  accepted; its errors become :class:`InvalidSyntax` with the span Python reports.
- The AST denotes the language ``re.fullmatch`` accepts. Constructs that are not regular or
  whose meaning depends on position (backreferences, lookaround, ``\\b``/``\\B``,
  conditionals, atomic groups, possessive quantifiers, anchors not at the very start or end)
  raise :class:`Unsupported` naming the feature and its span. Lazy quantifiers are accepted:
  they describe the same language.
- Character sets are sets of code points (see :mod:`tokamata.automata.charset`) computed with
  Python's tables; ``(?i)`` sets are computed by ``re`` itself.
- Every node count and nesting depth is checked against :class:`tokamata.Limits`.
- The literal text of TEXT_UNTIL and SUBSTRING_OF (plain characters and escaped
  punctuation) is read in time linear in its length, with a few C-speed scans, not one
  atom at a time, and ``re`` validates the pattern with each such text shortened to one
  character (no literal text changes whether a pattern is valid; on an error the pattern
  is validated again as written, for the error's position): a 100,000-character text
  parses in milliseconds. What is accepted, and every error, is as if parsed atom by atom.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Union

from ..automata import charset as cs
from ..errors import InvalidSyntax, Unsupported
from ..deadline import check_deadline
from ..errors import LimitExceeded
from ..limits import Limits
from .extensions import NAMES, TOKEN_WILDCARDS

__all__ = ["parse_regex", "Chars", "Concat", "Alternation", "Repeat", "Extension", "Node", "UNBOUNDED", "MAX_COUNT",
           "has_token_wildcard"]

UNBOUNDED = -1
_MAXREPEAT = 4294967295  # re's MAXREPEAT: a bound this large means "no bound"
#: the largest count of a counted repetition the engine holds (its counters are 32-bit)
MAX_COUNT = 2 ** 31 - 1


@dataclass(frozen=True)
class Chars:
    """One character from ``charset``."""
    charset: cs.CharSet


@dataclass(frozen=True)
class Concat:
    items: tuple["Node", ...]


@dataclass(frozen=True)
class Alternation:
    options: tuple["Node", ...]


@dataclass(frozen=True)
class Repeat:
    """``item`` repeated ``low`` to ``high`` times (``high == UNBOUNDED``: no bound)."""
    item: "Node"
    low: int
    high: int


@dataclass(frozen=True)
class Extension:
    """A seed 000 extension group ``(?P<NAME>...)`` (:mod:`.extensions`) at ``span``:
    ``argument`` is the literal text of TEXT_UNTIL and SUBSTRING_OF; ``items``, ``delimiter``,
    ``low`` and ``high`` describe DELIMITED_LIST (one item) and DELIMITED_SUBSEQUENCE_OF."""
    name: str
    span: tuple[int, int]
    argument: str = ""
    items: tuple["Node", ...] = ()
    delimiter: "Node | None" = None
    low: int = 1
    high: int = UNBOUNDED


@dataclass(frozen=True)
class _Delimiter:
    """``(?P<DELIMITER>...)`` while its DELIMITED_* group is being parsed."""
    node: "Node"
    span: tuple[int, int]


Node = Union[Chars, Concat, Alternation, Repeat, Extension]
EMPTY_STRING = Concat(())

# plain ints: enum flag arithmetic is slow on the per-character path
_ASCII, _IGNORECASE, _DOTALL, _VERBOSE, _MULTILINE = (int(f) for f in (re.ASCII, re.IGNORECASE, re.DOTALL,
                                                                          re.VERBOSE, re.MULTILINE))
_FLAG_LETTERS = {"a": _ASCII, "i": _IGNORECASE, "L": int(re.LOCALE), "m": _MULTILINE,
                 "s": _DOTALL, "u": int(re.UNICODE), "x": _VERBOSE}
_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_CATEGORY_LETTERS = "dDwWsS"


def parse_regex(pattern: str, limits: Limits) -> Node:
    """Parse ``pattern`` (Python ``re`` syntax) into an AST for its full-match language.

    >>> parse_regex("a|b", Limits())
    Alternation(options=(Chars(charset=((97, 97),)), Chars(charset=((98, 98),))))
    """
    if not isinstance(pattern, str):
        raise InvalidSyntax(f"a regex must be a str, got {type(pattern).__name__}")
    if len(pattern) > limits.max_pattern_length:
        raise LimitExceeded("max_pattern_length", len(pattern), limits.max_pattern_length)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                compiled = re.compile(_unique_extension_names(_LITERAL_ARGUMENT.sub(_shorten, pattern)))
            except re.error:  # again as written: the error's position in the pattern
                compiled = re.compile(_unique_extension_names(pattern))
    except re.error as error:
        pos = error.pos if error.pos is not None else 0
        raise InvalidSyntax(f"invalid regex: {error.msg}", text=pattern,
                            span=(pos, min(pos + 1, len(pattern)))) from None
    except RecursionError:
        raise LimitExceeded("max_nesting_depth", "more than Python's recursion limit",
                            limits.max_nesting_depth) from None
    except (OverflowError, ValueError) as error:
        raise InvalidSyntax(f"invalid regex: {error}", text=pattern, span=(0, len(pattern))) from None
    return _Parser(pattern, compiled.flags, limits).parse()


#: one character of the literal text of TEXT_UNTIL / SUBSTRING_OF: anything but regex syntax,
#: whitespace and "#" (verbose mode), "-" (class ranges), or an escaped non-alphanumeric
#: character (what ``re.escape`` writes)
_LITERAL_CHAR = r"(?:[^\\()\[\]{}|.*+?^$#\s\-]|\\[^0-9A-Za-z])"
#: a TEXT_UNTIL or SUBSTRING_OF group whose body is literal text of two characters or more
_LITERAL_ARGUMENT = re.compile(r"(\(\?P<(?:TEXT_UNTIL|SUBSTRING_OF)>)(" + _LITERAL_CHAR + r"{2,})\)")
#: the literal text of the extension group whose body starts here, then its ")"
_LITERAL_BODY = re.compile("(" + _LITERAL_CHAR + r"*)\)")
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def _shorten(m: re.Match) -> str:
    """A literal argument shortened to one character (its validity does not depend on it)."""
    return m.group(1) + "x)"


#: group names that spell extensions, with DELIMITER (inside the DELIMITED_* groups)
_EXTENSION_GROUP = re.compile(r"\(\?P<(" + "|".join(NAMES + ("DELIMITER",)) + r")>")
_UPPER_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _unique_extension_names(pattern: str) -> str:
    """``pattern`` with each extension group renamed to a unique name of the same length, so
    that ``re`` (which refuses a group name used twice) validates the rest of the syntax and
    its error positions stay those of the pattern."""
    count = iter(range(1 << 30))

    def rename(m: re.Match) -> str:
        n = next(count)
        letters = []
        for _ in range(len(m.group(1)) - 1):
            n, digit = divmod(n, 26)
            letters.append(chr(65 + digit))
        return "(?P<Z" + "".join(letters) + ">"

    return _EXTENSION_GROUP.sub(rename, pattern)


def has_token_wildcard(node: Node) -> bool:
    """Whether ``node`` holds a wildcard that matches whole tokens (TEXT_TOKEN, ...): then the
    pattern is no single byte language and lowers to a grammar."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Extension):
            if item.name in TOKEN_WILDCARDS:
                return True
            stack.extend(item.items)
            if item.delimiter is not None:
                stack.append(item.delimiter)
        elif isinstance(item, Concat):
            stack.extend(item.items)
        elif isinstance(item, Alternation):
            stack.extend(item.options)
        elif isinstance(item, Repeat):
            stack.append(item.item)
    return False


class _Parser:
    def __init__(self, pattern: str, flags: int, limits: Limits):
        self.text = pattern
        self.pos = 0
        self.limits = limits
        self.nodes = 0
        self.depth = 0
        # global flags are known from re.compile; inline scoped flags push/pop on this stack
        self.flags = int(flags) & (_ASCII | _IGNORECASE | _DOTALL | _VERBOSE | _MULTILINE)
        self.delimiters: list[_Delimiter] | None = None  # inside a DELIMITED_* group: its DELIMITER

    # -- helpers -------------------------------------------------------------------------
    def error_unsupported(self, feature: str, start: int, end: int | None = None) -> Unsupported:
        return Unsupported(feature, text=self.text, span=(start, end if end is not None else self.pos))

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def startswith(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def count_node(self) -> None:
        self.nodes += 1
        if self.nodes > self.limits.max_regex_nodes:
            raise LimitExceeded("max_regex_nodes", self.nodes, self.limits.max_regex_nodes)
        if not self.nodes & 255:
            check_deadline()

    def skip_verbose(self) -> None:
        if not self.flags & _VERBOSE:
            return
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t\n\r\f\v":
                self.pos += 1
            elif c == "#":
                nl = self.text.find("\n", self.pos)
                self.pos = len(self.text) if nl < 0 else nl + 1
            else:
                break

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> Node:
        node = self.alternation(top=True)
        if self.pos != len(self.text):  # pragma: no cover - re.compile validated the syntax
            raise InvalidSyntax("unbalanced parenthesis", text=self.text, span=(self.pos, self.pos + 1))
        return node

    def alternation(self, top: bool = False) -> Node:
        self.depth += 1
        if self.depth > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", self.depth, self.limits.max_nesting_depth)
        options = [self.sequence(top)]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence(top))
        self.depth -= 1
        return options[0] if len(options) == 1 else Alternation(tuple(options))

    def sequence(self, top: bool) -> Node:
        items: list[Node] = []
        starts: list[int] = []
        first = True
        while True:
            self.skip_verbose()
            c = self.peek()
            if c == "" or c == "|" or c == ")":
                break
            start = self.pos
            if c in "^$" or (c == "\\" and self.peek(1) in "AZbB"):
                self.anchor(top, first)
                continue
            atom = self.atom()
            if atom is None:  # a flag group or comment: no text; a quantifier after a comment
                # repeats the item before it, as in re ('a(?#c)*' is 'a*')
                if items and self.peek() in ("*", "+", "?", "{"):
                    items[-1] = self.quantified(items[-1], starts[-1])
                continue
            first = False
            starts.append(start)
            items.append(self.quantified(atom, start))
        if len(items) == 1:
            return items[0]
        return Concat(tuple(items))

    def anchor(self, top: bool, first: bool) -> None:
        start = self.pos
        c = self.peek()
        length = 1 if c in "^$" else 2
        kind = c if c in "^$" else self.text[start:start + 2]
        self.pos += length
        if kind in ("\\b", "\\B"):
            raise self.error_unsupported("word boundary " + kind, start)
        if kind in ("^", "\\A"):
            if top and first:
                return
            raise self.error_unsupported(f"anchor {kind} inside the pattern", start)
        # "$" / "\Z": allowed only where nothing can follow within this top-level option
        save = self.pos
        self.skip_verbose()
        at_end = self.peek() in ("", "|")
        self.pos = save
        if top and at_end:
            return
        raise self.error_unsupported(f"anchor {kind} inside the pattern", start)

    def quantified(self, atom: Node, start: int) -> Node:
        while True:
            self.skip_verbose()
            c = self.peek()
            qstart = self.pos
            if c == "*":
                low, high = 0, UNBOUNDED
                self.pos += 1
            elif c == "+":
                low, high = 1, UNBOUNDED
                self.pos += 1
            elif c == "?":
                low, high = 0, 1
                self.pos += 1
            elif c == "{":
                bounds = self.braces()
                if bounds is None:
                    return atom
                low, high = bounds
            else:
                return atom
            if self.peek() == "?":
                self.pos += 1  # lazy: same language
            elif self.peek() == "+":
                self.pos += 1
                raise self.error_unsupported("possessive quantifier", qstart)
            self.count_node()
            if isinstance(atom, Extension) and atom.name == "DELIMITED_LIST" and atom.span[1] == qstart:
                # the list's first quantifier counts its items
                atom = Extension(atom.name, (atom.span[0], self.pos), items=atom.items, delimiter=atom.delimiter,
                                 low=low, high=high)
                continue
            atom = Repeat(atom, low, high)

    def braces(self) -> tuple[int, int] | None:
        m = re.compile(r"\{(\d*)(,?)(\d*)\}").match(self.text, self.pos)
        if not m or (not m.group(1) and not m.group(2)) or (not m.group(2) and not m.group(1)):
            return None  # a literal "{", as in re
        if not m.group(1) and not m.group(3) and m.group(2):
            low, high = 0, UNBOUNDED  # "{,}"
        else:
            low = int(m.group(1)) if m.group(1) else 0
            if m.group(2):
                high = int(m.group(3)) if m.group(3) else UNBOUNDED
            else:
                high = low
        if high != UNBOUNDED and high >= _MAXREPEAT:
            high = UNBOUNDED
        if low > MAX_COUNT or high > MAX_COUNT:
            raise Unsupported("counted repetition", f"counts above {MAX_COUNT}", text=self.text,
                              span=(self.pos, m.end()))
        self.pos = m.end()
        return low, high

    def atom(self) -> Node | None:
        start = self.pos
        c = self.peek()
        self.count_node()
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == ".":
            self.pos += 1
            charset = cs.ANY if self.flags & _DOTALL else cs.complement(((10, 10),))
            return Chars(charset)
        if c == "\\":
            return self.escape_atom()
        self.pos += 1
        return self.finish_chars(((ord(c), ord(c)),), start)

    def finish_chars(self, charset: cs.CharSet, start: int) -> Chars:
        if self.flags & _IGNORECASE:
            charset = cs.ignore_case(charset, self.text[start:self.pos], self.flags & _ASCII)
        return Chars(charset)

    def group(self) -> Node | None:
        start = self.pos
        self.pos += 1
        saved_flags = self.flags
        if self.peek() != "?":
            node = self.alternation()
            self.pos += 1  # ")"
            return node if not isinstance(node, Concat) or node.items else EMPTY_STRING
        # extension syntax
        nxt = self.peek(1)
        if nxt == ":":
            self.pos += 2
        elif self.startswith("?P<"):
            end = self.text.index(">", self.pos)
            name = self.text[self.pos + 3:end]
            self.pos = end + 1
            if name in NAMES or name == "DELIMITER":
                return self.extension(name, start)
            self.check_group_name(name, start)
        elif self.startswith("?P="):
            end = self.text.index(")", self.pos)
            raise self.error_unsupported("backreference", start, end + 1)
        elif nxt == "#":
            end = self.text.index(")", self.pos)
            self.pos = end + 1
            return None
        elif self.startswith("?=") or self.startswith("?!") or self.startswith("?<=") or self.startswith("?<!"):
            raise self.error_unsupported("lookaround", start, self._group_end(start))
        elif nxt == "(":
            raise self.error_unsupported("conditional group", start, self._group_end(start))
        elif nxt == ">":
            raise self.error_unsupported("atomic group", start, self._group_end(start))
        else:
            # inline flags: (?aiLmsux) global, or (?flags-flags:...) scoped
            m = re.compile(r"\?([aiLmsux]*)(?:-([imsx]*))?([:)])").match(self.text, self.pos)
            if not m:  # pragma: no cover - re.compile validated the syntax
                raise InvalidSyntax("unknown extension", text=self.text, span=(start, start + 3))
            on, off, closer = m.group(1), m.group(2) or "", m.group(3)
            self.pos = m.end()
            if closer == ")":
                # global flags (re requires them at the start); already in self.flags
                for letter in on:
                    self.flags |= _FLAG_LETTERS[letter]
                self.skip_verbose()
                return None
            for letter in on:
                self.flags |= _FLAG_LETTERS[letter]
            for letter in off:
                self.flags &= ~_FLAG_LETTERS[letter]
        node = self.alternation()
        self.pos += 1  # ")"
        self.flags = saved_flags
        return node

    # -- extensions (seed 000 Table 1) ------------------------------------------------------
    def check_group_name(self, name: str, start: int) -> None:
        """An upper-case group name that is empty or close to an extension's is a misspelled
        extension (any other name is an ordinary group)."""
        if not _UPPER_NAME.fullmatch(name):
            return
        close = difflib.get_close_matches(name, NAMES, n=1, cutoff=0.75)
        if close or self.text.startswith(")", self.pos):
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise InvalidSyntax(f"unknown extension {name}{hint}; the extensions are {', '.join(NAMES)}",
                                text=self.text, span=(start, start + 5 + len(name)))

    def extension(self, name: str, start: int) -> Node:
        """The extension group ``(?P<name>`` opened at ``start`` (the cursor after ``>``)."""
        if name == "DELIMITER":
            if self.delimiters is None:
                raise InvalidSyntax("(?P<DELIMITER>...) belongs at the end of a DELIMITED_LIST or "
                                    "DELIMITED_SUBSEQUENCE_OF group", text=self.text, span=(start, self.pos))
            delimiters, self.delimiters = self.delimiters, None
            node = self.alternation()
            self.pos += 1  # ")"
            self.delimiters = delimiters
            found = _Delimiter(node, (start, self.pos))
            delimiters.append(found)
            return found  # type: ignore[return-value]
        if name in ("DELIMITED_LIST", "DELIMITED_SUBSEQUENCE_OF"):
            return self.delimited(name, start)
        body_start = self.pos
        if name in ("TEXT_UNTIL", "SUBSTRING_OF") and not self.flags & _IGNORECASE:
            literal = self.literal_argument()
            if literal is not None:
                if not literal:
                    raise InvalidSyntax(f"empty {name}: it needs a non-empty text", text=self.text,
                                        span=(start, self.pos))
                return Extension(name, (start, self.pos), argument=literal)
        saved, self.delimiters = self.delimiters, None
        body = self.alternation()
        self.pos += 1  # ")"
        self.delimiters = saved
        span = (start, self.pos)
        if name in ("TEXT_UNTIL", "SUBSTRING_OF"):
            text = _literal_text(body)
            if text is None:
                raise InvalidSyntax(f"{name} takes literal text (escape regex characters: \\. \\( ...)",
                                    text=self.text, span=(body_start, self.pos - 1))
            if not text:
                raise InvalidSyntax(f"empty {name}: it needs a non-empty text", text=self.text, span=span)
            return Extension(name, span, argument=text)
        if body != EMPTY_STRING:
            raise InvalidSyntax(f"{name} takes no argument: write (?P<{name}>)", text=self.text,
                                span=(body_start, self.pos - 1))
        return Extension(name, span)

    def literal_argument(self) -> str | None:
        """The literal text of the extension group whose body starts at the cursor, read
        whole (the cursor then after its ")"); None when the body is more than literal text
        (then it is parsed atom by atom). Counts a node per character and the body's nesting
        level, as the atoms would."""
        m = _LITERAL_BODY.match(self.text, self.pos)
        if m is None:
            return None
        body = m.group(1)
        if self.depth + 1 > self.limits.max_nesting_depth:
            raise LimitExceeded("max_nesting_depth", self.depth + 1, self.limits.max_nesting_depth)
        # (split keeps each escaped character and drops its backslash: no call per escape)
        text = "".join(_ESCAPED.split(body)) if "\\" in body else body
        if self.nodes + len(text) > self.limits.max_regex_nodes:
            self.nodes = self.limits.max_regex_nodes + 1
            raise LimitExceeded("max_regex_nodes", self.nodes, self.limits.max_regex_nodes)
        self.nodes += len(text)
        check_deadline()
        self.pos = m.end()
        return text

    def delimited(self, name: str, start: int) -> Node:
        """``(?P<DELIMITED_LIST>ITEM(?P<DELIMITER>D))`` or ``(?P<DELIMITED_SUBSEQUENCE_OF>A|B|C
        (?P<DELIMITER>D))``: the DELIMITER group ends the body; before it, the item (the
        items: the alternatives)."""
        saved, self.delimiters = self.delimiters, []
        body = self.alternation()
        self.pos += 1  # ")"
        delimiters, self.delimiters = self.delimiters, saved
        span = (start, self.pos)
        options: list[Node] = list(body.options) if isinstance(body, Alternation) else [body]
        last = options[-1]
        parts = list(last.items) if isinstance(last, Concat) else [last]
        if len(delimiters) != 1 or not parts or parts[-1] is not delimiters[0]:
            raise InvalidSyntax(f"malformed {name}: its body is the item(s) followed by one (?P<DELIMITER>...) "
                                f"group, as in (?P<{name}>a|b(?P<DELIMITER>, ))", text=self.text, span=span)
        rest = parts[:-1]
        options[-1] = rest[0] if len(rest) == 1 else Concat(tuple(rest))
        if name == "DELIMITED_LIST":
            item = options[0] if len(options) == 1 else Alternation(tuple(options))
            return Extension(name, span, items=(item,), delimiter=delimiters[0].node)
        return Extension(name, span, items=tuple(options), delimiter=delimiters[0].node)

    def _group_end(self, start: int) -> int:
        depth = 0
        i = start
        while i < len(self.text):
            ch = self.text[i]
            if ch == "\\":
                i += 2
                continue
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return len(self.text)

    # -- escapes and classes ---------------------------------------------------------------
    def escape_atom(self) -> Node:
        start = self.pos
        c = self.peek(1)
        if c.isdigit() and c != "0":
            # \1..\99 are backreferences unless they are a 3-digit octal escape
            m = re.compile(r"\\([0-7]{3})").match(self.text, self.pos)
            if m and int(m.group(1), 8) <= 0o377:
                self.pos = m.end()
                code = int(m.group(1), 8)
                return self.finish_chars(((code, code),), start)
            m = re.compile(r"\\\d{1,2}").match(self.text, self.pos)
            assert m is not None
            raise self.error_unsupported("backreference", start, m.end())
        if c in _CATEGORY_LETTERS:
            self.pos += 2
            return self.finish_chars(cs.category(c, bool(self.flags & _ASCII)), start)
        code = self.escape_code(in_class=False)
        return self.finish_chars(((code, code),), start)

    def escape_code(self, in_class: bool) -> int:
        """Consume an escape that denotes one code point and return it."""
        start = self.pos
        c = self.peek(1)
        self.pos += 2
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if in_class and c == "b":
            return 8
        if c == "x":
            code = int(self.text[self.pos:self.pos + 2], 16)
            self.pos += 2
            return code
        if c == "u":
            code = int(self.text[self.pos:self.pos + 4], 16)
            self.pos += 4
            return code
        if c == "U":
            code = int(self.text[self.pos:self.pos + 8], 16)
            self.pos += 8
            return code
        if c == "N":
            end = self.text.index("}", self.pos)
            name = self.text[self.pos + 1:end]
            self.pos = end + 1
            return ord(unicodedata.lookup(name))
        if c == "0" or (in_class and c in "1234567"):
            m = re.compile(r"[0-7]{0,2}").match(self.text, self.pos)
            assert m is not None
            self.pos = m.end()
            return int(c + m.group(0), 8)
        if c.isascii() and c.isalnum():  # pragma: no cover - re.compile rejects these
            raise InvalidSyntax(f"bad escape \\{c}", text=self.text, span=(start, self.pos))
        return ord(c)

    def char_class(self) -> Chars:
        start = self.pos
        self.pos += 1
        negate = False
        if self.peek() == "^":
            negate = True
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.peek()
            if c == "]" and not first:
                self.pos += 1
                break
            first = False
            if c == "\\" and self.peek(1) in _CATEGORY_LETTERS:
                ranges.extend(cs.category(self.peek(1), bool(self.flags & _ASCII)))
                self.pos += 2
                continue
            lo = self.class_code()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi = self.class_code()
                ranges.append((lo, hi))
            else:
                ranges.append((lo, lo))
        charset = cs.normalize(ranges)
        if negate:
            charset = cs.complement(charset)
        return self.finish_chars(charset, start)

    def class_code(self) -> int:
        c = self.peek()
        if c == "\\":
            return self.escape_code(in_class=True)
        self.pos += 1
        return ord(c)


def _literal_text(node: Node) -> str | None:
    """The string ``node`` matches when it is a plain sequence of single characters."""
    items = node.items if isinstance(node, Concat) else (node,)
    out = []
    for item in items:
        if not isinstance(item, Chars) or len(item.charset) != 1 or item.charset[0][0] != item.charset[0][1]:
            return None
        out.append(chr(item.charset[0][0]))
    return "".join(out)
