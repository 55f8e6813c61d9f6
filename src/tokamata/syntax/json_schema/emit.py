"""Nodes -> grammar rules: one nonterminal per (schema conjunction, depth), objects and arrays
as counted sequences of members.

Invariants:
- The value nonterminal of a Conj derives exactly the JSON texts (in the chosen layout) of the
  values in its node: scalars are one terminal (the union of the node's scalar languages);
  each object/array shape adds alternatives. Member schemas are value nonterminals too,
  created on first use, so recursive schemas become recursive rules.
- Conjunctions with equal nodes at one depth (a definition ``$ref``'d from many places, each
  reference its own conjunction) get the same right-hand sides: the first one's are built,
  the others replay them, so the grammar is the one a rebuild would give (the shapes' states,
  terminals and member values are shared by key anyway).
- Objects list the declared members in order (optional ones may be skipped), then any number
  of undeclared members (with ``property_order="any"``: in any order, required ones present;
  the set of required members written is a state, so this is exponential in them and
  bounded; optional members may repeat unless counts or witnesses need exact sets). Undeclared members' keys are
  partitioned into regions by the shape's rules (a member's schema is the union of the
  rules its key matches). A separator and a key with its
  colon are one terminal. Counts (min/max properties, min/max items, contains) are states of
  the rules, saturating where only a lower bound matters; every state is a nonterminal, and
  grammar size is bounded by ``Limits.max_grammar_symbols``.
- ``uniqueItems`` (:meth:`Emitter._unique_array`) is exact when every item position's schema
  has finitely many values (:mod:`.values`), at most ``Limits.max_unique_items_values`` in
  all: a state is the set of values used so far (as equality classes), and an item is a
  spelling of an unused one (its position's schema intersected with that one value). Any
  other case raises :class:`Unsupported` naming ``uniqueItems`` and its schema's pointer,
  or, when ``approximate`` names it, is reported and emitted without the check.
- ``spelling="natural"``: each value terminal's number and string parts, and each key, are
  restricted to their natural spellings (:mod:`..json_spelling`, :mod:`.natural`) once, here:
  the languages the expander builds are closed under spelling, so every value keeps exactly
  its natural spelling. Declared keys are their natural spelling outright; undeclared keys
  are the names language made natural before it is split into regions.
- Depth matters only for ``pretty`` (indentation); elsewhere every member is at depth 0.
- Every terminal, nonterminal and rule goes through one
  :class:`~tokamata.grammar.builder.GrammarBuilder` (character-level, unproductive rules
  expected), which counts the grammar's size; rules whose symbols derive nothing (empty
  schemas) are dropped by its dead-rule pass before ``check_grammar``; an empty start symbol
  is a :class:`SchemaError` (the schema allows no value).
"""

from __future__ import annotations

from ...automata import boolean

from ...automata import derivatives as d
from ...deadline import check_deadline
from ...errors import SchemaError, Unsupported
from ...grammar.builder import GrammarBuilder
from ...grammar.ir import Grammar
from ...limits import Limits
from ..json_spelling import natural_literal
from . import lexemes as lx
from . import numbers as nm
from .complements import negation
from .expand import Expander
from .nodes import FALSE_TERM, TRUE, ArrayShape, Conj, ObjectShape
from .refs import pointer, unsupported
from .report import Options, Report
from .values import NotFinite, ValueSets, equality_key, value_term

__all__ = ["Emitter"]

_MAX_REGIONS = 256
_PRETTY_DEPTH = 64
_MAX_ORDER_STATES = 4096  # property_order='any': subsets of declared members


class Emitter:
    """Builds one grammar from an :class:`Expander`'s nodes."""

    def __init__(self, expander: Expander, options: Options, limits: Limits, report: Report):
        self.expander = expander
        self.options = options
        self.limits = limits
        self.report = report
        self.layout = lx.Layout(options.whitespace, options.indent, options.max_whitespace)
        # generated rules may mention schemas that allow no value: dropping their rules is
        # expected, not a mistake to report
        self.builder = GrammarBuilder("", limits, character_level=True, drop_unproductive=True)
        self._values: dict[tuple[Conj, int], int] = {}
        self._pending: list[tuple[Conj, int, int]] = []
        self._states: dict[tuple, int] = {}
        self._deferred: list = []
        # (node, depth) -> the right-hand sides its value nonterminal got: conjunctions with
        # the same node (a definition $ref'd from many places) replay them, not rebuild them
        self._emitted: dict[tuple, list[list[int]]] = {}
        self._recording: int | None = None  # the value symbol being emitted
        self._recorded: list[list[int]] = []
        self._keys: dict[tuple[str, d.Expr], d.Expr] = {}  # see _key
        self.values = ValueSets(expander, limits)
        self.natural = expander.natural  # (used with spelling="natural")

    # -- building blocks --------------------------------------------------------------------
    def terminal(self, expr: d.Expr, name: str) -> int:
        return self.builder.terminal(name, expr, None, True)

    def nonterminal(self, name: str) -> int:
        return self.builder.numbered(name)

    def rule(self, lhs: int, rhs: list[int]) -> None:
        if lhs == self._recording:
            self._recorded.append(rhs)
        self.builder.add_rule(lhs, rhs)

    def value(self, conj: Conj, depth: int) -> int:
        if not self.layout.depth_dependent:
            depth = 0
        key = (conj, depth)
        symbol = self._values.get(key)
        if symbol is None:
            symbol = self._values[key] = self.nonterminal("value")
            self._pending.append((conj, depth, symbol))
        return symbol

    def _state(self, key: tuple, name: str, rules) -> int:
        """The nonterminal of a counting state; ``rules(symbol)`` makes its rules later (a
        work list, not recursion: counts may be large)."""
        symbol = self._states.get(key)
        if symbol is None:
            symbol = self._states[key] = self.nonterminal(name)
            self._deferred.append(lambda: rules(symbol))
        return symbol

    # -- the grammar ------------------------------------------------------------------------
    def build(self, root: Conj, source: str) -> Grammar:
        start = self.nonterminal("start")
        top = self.value(root, 0)
        self.rule(start, [top])
        if self.options.whitespace == "flexible":
            ws = self.terminal(d.repeat(d.byte_set(d.byte_mask(" \t\n\r")), 1,
                                        self.options.max_whitespace), "ws")
            self.rule(start, [ws, top])
            self.rule(start, [top, ws])
            self.rule(start, [ws, top, ws])
        while self._pending or self._deferred:
            check_deadline()
            if self._deferred:
                self._deferred.pop()()
                continue
            conj, depth, symbol = self._pending.pop()
            self._emit_value(conj, depth, symbol)
        return self._finish(start, source)

    def _emit_value(self, conj: Conj, depth: int, symbol: int) -> None:
        if FALSE_TERM in conj:
            return
        node = self.expander.node(conj)
        key = (node, depth)
        done = self._emitted.get(key)
        if done is not None:
            for rhs in done:
                self.builder.add_rule(symbol, rhs)
            return
        self._recording, self._recorded = symbol, []
        self._emit_node(node, conj, depth, symbol)
        self._emitted[key] = self._recorded
        self._recording = None

    def _emit_node(self, node, conj: Conj, depth: int, symbol: int) -> None:
        """The rules of ``symbol``, the value nonterminal of ``conj`` (whose node is ``node``)."""
        narrowed: list = []
        number, string = nm.overflow_safe(node.number, self.limits, narrowed), node.string
        if self.options.natural:  # (integral values have no fraction anyway: nothing narrowed to report)
            number, string = self.natural.number(number), self.natural.string(string)
        elif narrowed:
            self.report.add("integer-notation", "", f"integral multiples ({max(narrowed)} remainders) are "
                            "spelled without a fraction (6, not 6.0): the exact spelling would pair every "
                            "remainder with each of 309 integer-part lengths")
        scalars = node.scalars(number, string)
        if scalars is not d.NOTHING:
            self.rule(symbol, [self.terminal(scalars, "scalar")])
        if not (node.objects or node.arrays):
            return
        if self.layout.depth_dependent and depth >= _PRETTY_DEPTH:
            if "pretty-depth" not in self.options.approximate:
                schemas = sorted(term for term in conj if isinstance(term, int))  # (none: any value)
                where = pointer(self.expander.doc.path(schemas[0])) if schemas else None
                raise Unsupported("whitespace='pretty'", f"nesting deeper than {_PRETTY_DEPTH} levels (a "
                                  "recursive schema or any-value member); pass approximate={'pretty-depth'} "
                                  "to stop nesting there", pointer=where)
            self.report.add("pretty-depth", "", f"objects and arrays are not nested deeper than "
                            f"{_PRETTY_DEPTH} levels with whitespace='pretty'")
            return
        for shape in node.objects:
            self._object(shape, depth, symbol)
        for array in node.arrays:
            self._array(array, depth, symbol)

    # -- objects ----------------------------------------------------------------------------
    def _regions(self, shape: ObjectShape, keys: dict[str, d.Expr],
                 colon: d.Expr) -> list[tuple[d.Expr, Conj, frozenset]]:
        """Undeclared keys, each followed by the colon, partitioned by the rules and witnesses
        they match: (keys and colon, schema of the value, witnesses the member may meet).
        ``keys`` maps every declared name to its key and colon (``string_literal_then``)."""
        for language, conj in shape.rules:
            if language is lx.ANY_STRING and FALSE_TERM in conj:
                return []  # no undeclared member at all (additionalProperties: false)
        all_names = self.natural.string(shape.names) if self.options.natural else shape.names
        if all(language is lx.ANY_STRING for language, _ in shape.rules) and not shape.witnesses:
            # nothing splits the undeclared keys: they are the names minus the declared ones,
            # here with the colon, (A - B)C == AC - BC: JSON strings are prefix-free (the
            # closing quote ends one), so a key followed by a colon splits one way only. The
            # declared keys with their colon are those of their terminals: no second spelling
            # of every name is built
            conj = TRUE.union(*(c for _, c in shape.rules))
            region = boolean.difference(d.concat(all_names, colon), d.alternation(*keys.values()), self.limits)
            return [] if region is d.NOTHING or FALSE_TERM in conj else [(region, conj, frozenset())]
        names = d.alternation(*(lx.string_literal(n) for n in keys))
        parts: list[tuple[d.Expr, Conj, frozenset[int]]] = [
            (boolean.difference(all_names, names, self.limits), TRUE, frozenset())]
        splitters: list[tuple[d.Expr, Conj, int | None]] = [(language, conj, None) for language, conj in shape.rules]
        splitters += [(language, TRUE, j) for j, (language, _) in enumerate(shape.witnesses)]
        for language, conj, witness in splitters:
            if language is lx.ANY_STRING:  # every key: no split
                parts = [(region, have | conj, met if witness is None else met | {witness})
                         for region, have, met in parts]
                continue
            split = []
            for region, have, met in parts:
                inside = boolean.intersection(region, language, limits=self.limits)
                outside = boolean.difference(region, language, self.limits)
                if inside is not d.NOTHING:
                    split.append((inside, have | conj, met if witness is None else met | {witness}))
                if outside is not d.NOTHING:
                    split.append((outside, have, met))
            parts = split
            self.builder.check_count(len(parts), _MAX_REGIONS)
        merged: dict[tuple, d.Expr] = {}
        for region, conj, met in parts:
            if region is d.NOTHING or FALSE_TERM in conj:
                continue
            merged[(conj, met)] = d.alternation(merged.get((conj, met), d.NOTHING), region)
        return [(d.concat(region, colon), conj, met) for (conj, met), region in merged.items()]

    def _key(self, name: str, colon: d.Expr) -> d.Expr:
        """The key ``name`` in the chosen spelling followed by ``colon``, built once per compile
        (object shapes of one schema share many names)."""
        found = self._keys.get((name, colon))
        if found is None:
            found = natural_literal(name, colon) if self.options.natural else lx.string_literal_then(name, colon)
            self._keys[(name, colon)] = found
        return found

    def _object(self, shape: ObjectShape, depth: int, lhs: int) -> None:
        from .strings import name_accepts

        layout = self.layout
        witnesses = shape.witnesses
        every = frozenset(range(len(witnesses)))
        members: list[tuple[str, Conj, bool, frozenset]] = []
        for name, conj in shape.declared:
            required = name in shape.required
            if FALSE_TERM in conj or not name_accepts(shape.names, name):
                if required:
                    return
                continue
            met = frozenset(j for j, (language, _) in enumerate(witnesses) if name_accepts(language, name))
            members.append((name, conj, required, met))
        colon = layout.colon()
        keys = {name: self._key(name, colon) for name, _ in shape.declared}
        regions = self._regions(shape, keys, colon)
        low, high = shape.min_properties, shape.max_properties
        if low <= sum(1 for m in members if m[2]):
            low = 0
        if high is not None and not regions and high >= len(members):
            high = None
        if high is not None and high < sum(1 for m in members if m[2]):
            return
        cap = high if high is not None else max(low, 1)
        opener = layout.open("{", depth)
        comma = layout.comma(depth)
        # a member's key terminal, after "{" or after ",": made when a rule first uses it (an
        # unused one would only be dropped again, renumbering the grammar's terminals)
        opening_keys: dict[d.Expr, int] = {}  # key -> its terminal after "{"
        later_keys: dict[d.Expr, int] = {}  # key -> its terminal after ","

        def key_terminal(key: d.Expr, first: bool) -> int:
            made = opening_keys if first else later_keys
            found = made.get(key)
            if found is None:
                found = made[key] = (self.terminal(d.concat(opener, key), "open_key") if first
                                     else self.terminal(d.concat(comma, key), "comma_key"))
            return found

        close = self.terminal(layout.close("}", depth), "close_object")
        tag = ("object", shape, depth)

        def advance(count: int) -> int:
            return count + 1 if high is not None else min(count + 1, cap)

        def values(conj: Conj, met: frozenset, done: frozenset) -> list[tuple[int, frozenset]]:
            """(value symbol, witnesses met after it): a member may meet any of the witnesses
            its key matches, if its value is in their schemas too."""
            options = [(conj, done)]
            for j in sorted(met - done):
                options += [(c | witnesses[j][1], m | {j}) for c, m in options]
                self.builder.check_room(4 * len(options))  # (each a rule: doubles per witness)
            return [(self.value(c, depth + 1), m) for c, m in options if FALSE_TERM not in c]

        def member_rules(symbol: int, count: int, done: frozenset, key: d.Expr,
                         conj: Conj, met: frozenset, following) -> None:
            options = values(conj, met, done)
            if options:
                opened = key_terminal(key, count == 0)
                for value, now in options:
                    self.rule(symbol, [opened, value, following(now)])

        def regions_state(count: int, done: frozenset) -> int:
            return self._state(tag + ("regions", count, done), "members",
                               lambda symbol: regions_rules(symbol, count, done))

        def regions_rules(symbol: int, count: int, done: frozenset) -> None:
            if count >= max(low, 1) and done == every:
                self.rule(symbol, [close])
            if high is None or count < high:
                for region, conj, met in regions:
                    member_rules(symbol, count, done, region, conj, met,
                                 lambda now: regions_state(advance(count), now))

        def declared_state(index: int, count: int, done: frozenset) -> int:
            if index == len(members):
                return regions_state(count, done)
            return self._state(tag + ("declared", index, count, done), "members",
                               lambda symbol: declared_rules(symbol, index, count, done))

        def declared_rules(symbol: int, index: int, count: int, done: frozenset) -> None:
            name, conj, required, met = members[index]
            if high is None or count < high:
                member_rules(symbol, count, done, keys[name], conj, met,
                             lambda now: declared_state(index + 1, advance(count), now))
            if not required:
                self.rule(symbol, [declared_state(index + 1, count, done)])

        def any_order_state(emitted: frozenset, count: int, done: frozenset) -> int:
            """Members in any order: ``emitted`` is the set of declared members written."""
            return self._state(tag + ("any", emitted, count, done), "members",
                               lambda symbol: any_order_rules(symbol, emitted, count, done))

        def any_order_rules(symbol: int, emitted: frozenset, count: int, done: frozenset) -> None:
            if count >= max(low, 1) and done == every and all(i in emitted for i, m in enumerate(members) if m[2]):
                self.rule(symbol, [close])
            if high is None or count < high:
                for i, (_, conj, required, met) in enumerate(members):
                    if i not in emitted:
                        # repeats allowed: only required members are remembered (see below)
                        after = emitted | {i} if (exact or required) else emitted
                        member_rules(symbol, count, done, keys[members[i][0]], conj, met,
                                     lambda now, after=after: any_order_state(after, advance(count), now))
                for region, conj, met in regions:
                    member_rules(symbol, count, done, region, conj, met,
                                 lambda now: any_order_state(emitted, advance(count), now))

        if low == 0 and not any(m[2] for m in members) and not witnesses:
            self.rule(lhs, [self.terminal(layout.empty("{}", depth), "empty_object")])
        # any order: the state remembers which declared members were written. Unless counts
        # or witnesses depend on it, only required members are remembered and the others may
        # repeat: every occurrence satisfies the member's schema, so whichever occurrence a
        # parser keeps is valid, and the key set is the same (2**required states, not 2**all)
        exact = low > 0 or bool(witnesses)
        remembered = len(members) if exact else sum(1 for m in members if m[2])
        if self.options.property_order == "any":
            self.builder.check_count(2 ** remembered, _MAX_ORDER_STATES)
            self.rule(lhs, [any_order_state(frozenset(), 0, frozenset())])
        else:
            self.rule(lhs, [declared_state(0, 0, frozenset())])

    # -- arrays -----------------------------------------------------------------------------
    def _array(self, shape: ArrayShape, depth: int, lhs: int) -> None:
        layout = self.layout
        low, high = shape.min_items, shape.max_items
        k = len(shape.prefix)
        if FALSE_TERM in shape.rest:
            high = k if high is None else min(high, k)
            if low > high:
                return
        contains = [(conj, at_least, at_most) for conj, at_least, at_most in shape.contains
                    if at_least > 0 or at_most is not None]
        if shape.unique and (high is None or high > 1) and self._unique_array(shape, depth, lhs, low, high, contains):
            return
        cap = high if high is not None else max(k, low, 1)
        caps = [at_most if at_most is not None else at_least for _, at_least, at_most in contains]
        opener = self.terminal(layout.open("[", depth), "open_array")
        comma = self.terminal(layout.comma(depth), "comma")
        close = self.terminal(layout.close("]", depth), "close_array")
        tag = ("array", shape, depth)

        def choices(position: Conj, counts: tuple) -> list[tuple[Conj, tuple]]:
            """(item schema, counts after it) for each way an item may count."""
            options: list[tuple[Conj, tuple]] = [(position, counts)]
            for j, (conj, at_least, at_most) in enumerate(contains):
                grown = []
                for item, now in options:
                    if at_most is None:
                        grown.append((item, now))  # not counted (sound for "at least")
                        if now[j] < caps[j]:
                            grown.append((item | conj, now[:j] + (now[j] + 1,) + now[j + 1:]))
                    else:
                        grown.append((item | negation(conj, ("maxContains",)), now))
                        if now[j] < at_most:
                            grown.append((item | conj, now[:j] + (now[j] + 1,) + now[j + 1:]))
                options = grown
                self.builder.check_room(4 * len(options))  # (each a rule: doubles per contains)
            return options

        def state(index: int, counts: tuple) -> int:
            return self._state(tag + (index, counts), "items", lambda symbol: state_rules(symbol, index, counts))

        def state_rules(symbol: int, index: int, counts: tuple) -> None:
            done = all(counts[j] >= at_least for j, (_, at_least, _) in enumerate(contains))
            if index >= max(low, 1) and done:
                self.rule(symbol, [close])
            if high is None or index < high:
                position = shape.at(index)
                following = index + 1 if high is not None else min(index + 1, cap)
                for item, now in choices(position, counts):
                    if FALSE_TERM in item:
                        continue
                    self.rule(symbol, [opener if index == 0 else comma, self.value(item, depth + 1),
                                       state(following, now)])

        if low == 0 and all(at_least == 0 for _, at_least, _ in contains):
            self.rule(lhs, [self.terminal(layout.empty("[]", depth), "empty_array")])
        self.rule(lhs, [state(0, (0,) * len(contains))])

    def _unique_array(self, shape: ArrayShape, depth: int, lhs: int, low: int, high: int | None,
                      contains: list) -> bool:
        """Arrays of ``shape`` whose items are pairwise distinct, exactly: every position's
        schema has finitely many values, grouped into equality classes; a state is the set
        of classes used so far (its size is the item count), and the next item is any
        spelling of an unused class its position allows. False when that cannot be done and
        ``approximate`` names uniqueItems (reported: the caller emits the array without it)."""
        path = shape.unique[0]
        bound = self.limits.max_unique_items_values
        k = len(shape.prefix)
        conjs = list(shape.prefix[:high] if high is not None else shape.prefix)
        if high is None or high > k:
            conjs.append(shape.rest)
        by_conj: dict[Conj, dict[int, list]] = {}  # position schema -> class -> its values
        classes: dict = {}  # equality key -> class
        reason = None
        try:
            for conj in dict.fromkeys(conjs):
                for value in self.values.values(conj):
                    c = classes.setdefault(equality_key(value), len(classes))
                    by_conj.setdefault(conj, {}).setdefault(c, []).append(value)
                if len(classes) > bound:
                    raise NotFinite(f"more than {bound} distinct values")
        except NotFinite as error:
            reason = f"{error.reason} (distinct items are enforced over at most {bound} item values, " \
                     "Limits.max_unique_items_values)"
        if reason is None:
            members = []  # per contains: the classes it counts
            for conj, _, _ in contains:
                found = set()
                for c, variants in ((c, v) for table in by_conj.values() for c, v in table.items()):
                    if self.values.holds(conj, variants[0]):
                        found.add(c)
                members.append(frozenset(found))
            at_least = [low_count for _, low_count, _ in contains]
            at_most = [high_count for _, _, high_count in contains]

            def options(used: frozenset) -> list[tuple[int, Conj, list]]:
                """(class, position schema, its values) an item may take after ``used``."""
                n = len(used)
                if high is not None and n >= high:
                    return []
                conj = shape.at(n)
                out = []
                for c, variants in by_conj.get(conj, {}).items():
                    if c in used or any(at_most[j] is not None and c in members[j]
                                        and len(used & members[j]) >= at_most[j] for j in range(len(contains))):
                        continue
                    out.append((c, conj, variants))
                return out

            nothing_used: frozenset = frozenset()
            seen, frontier, size = {nothing_used}, [nothing_used], 2
            while frontier:  # the grammar's size before building it: 2 ** classes at worst
                used = frontier.pop()
                size += 2
                for c, _, variants in options(used):
                    size += 4 * len(variants)
                    after = used | {c}
                    if after not in seen:
                        seen.add(after)
                        frontier.append(after)
            if not self.builder.fits(size):
                reason = f"{len(seen)} sets of used item values need more than Limits.max_grammar_symbols"
        if reason is not None:
            if "uniqueItems" not in self.options.approximate:
                raise unsupported("uniqueItems", path, reason + "; pass approximate={'uniqueItems'} to ignore it")
            self.report.add("uniqueItems", pointer(path + ("uniqueItems",)),
                            f"items are not checked for duplicates: {reason}")
            return False
        layout = self.layout
        opener = self.terminal(layout.open("[", depth), "open_array")
        comma = self.terminal(layout.comma(depth), "comma")
        close = self.terminal(layout.close("]", depth), "close_array")
        tag = ("unique", shape, depth)

        def state(used: frozenset) -> int:
            return self._state(tag + (used,), "unique_items", lambda symbol: state_rules(symbol, used))

        def state_rules(symbol: int, used: frozenset) -> None:
            if len(used) >= max(low, 1) and all(len(used & members[j]) >= at_least[j] for j in range(len(contains))):
                self.rule(symbol, [close])
            separator = opener if not used else comma
            for c, conj, variants in options(used):
                after = state(used | {c})
                for value in variants:
                    self.rule(symbol, [separator, self.value(conj | {value_term(value)}, depth + 1), after])

        if low == 0 and all(n == 0 for n in at_least):
            self.rule(lhs, [self.terminal(layout.empty("[]", depth), "empty_array")])
        self.rule(lhs, [state(frozenset())])
        return True

    # -- finishing --------------------------------------------------------------------------
    def _finish(self, start: int, source: str) -> Grammar:
        self.builder.source = source
        return self.builder.build(start, _no_value)


def _no_value() -> SchemaError:
    return SchemaError("the schema allows no JSON value", pointer="")
