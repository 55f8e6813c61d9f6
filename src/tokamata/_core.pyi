"""Type stubs for tokamata._core, the C++ extension (nanobind).

Plain data only: flat uint8/int32/int64 numpy arrays in, caller-owned int32 bitmasks out.
"""

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

class TokenTrie:
    """The vocabulary's byte trie in DFS order (byte, tokens, subtree size, parents to pop)."""

    def __init__(self, token_bytes: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64],
                 in_trie: npt.NDArray[np.uint8], vocab_size: int) -> None: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def max_depth(self) -> int: ...
    def arrays(self) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
        """(byte, token_begin, token_count, subtree_size, num_parents, token_ids) per node."""
    def has_longer_token(self, prefix: bytes) -> bool:
        """Some token begins with ``prefix`` and is longer (token healing)."""

class TokenSlices:
    """A trie's tokens split into slices (by a prefix-closed byte automaton, then by length)
    and the rest, each with its own trie; rows of dense states take whole slices."""

    def __init__(self, trie: TokenTrie, automaton: npt.NDArray[np.int32], bounds: npt.NDArray[np.int32]) -> None: ...
    def sizes(self) -> list[tuple[int, int, int]]:
        """(tokens, longest token in bytes, trie nodes) per slice, then the rest's (with its
        trie's depth)."""

class SharedRowCache:
    """Token rows by structural state key, shared by the constraints of one vocabulary."""

    def __init__(self, max_rows: int) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def evictions(self) -> int:
        """Entries dropped to make room (CLOCK: only those no constraint holds)."""

class RegexCore:
    """A lazily expanded byte DFA (a native lexer DFA) bound to a trie, with its per-state
    token rows; made by :func:`native_regex_core`."""

    @property
    def num_states(self) -> int: ...
    @property
    def num_cached_rows(self) -> int: ...

def native_regex_core(trie: TokenTrie, shared_rows: SharedRowCache | None, lexer: DerivativeDfa,
                      eos_ids: npt.NDArray[np.int32], max_states: int,
                      slices: TokenSlices | None = None) -> RegexCore:
    """A RegexCore over a native lexer DFA: expansions, keys and text depths run in C++."""

class ExprArena:
    """Hash-consed byte expressions with memoized derivatives (automata/native.py imports
    Python expressions into it). Ids are int32; every call drops the GIL."""

    def __init__(self) -> None: ...
    def import_nodes(self, records: npt.NDArray[np.int32]) -> list[int]:
        """Ids of post-order records (see cpp/include/tokamata/expr_arena.hpp); ValueError
        on a malformed record."""
    def set_search_budget(self, budget: int) -> None: ...
    def intersection(self, members: npt.NDArray[np.int32], budget: int) -> int:
        """The node of the intersection (0: empty), its emptiness searched within ``budget``
        product states (else tokamata.LimitExceeded max_dfa_states)."""
    def difference(self, first: int, second: int, budget: int) -> int:
        """The node of ``first`` minus ``second`` (0: empty), searched like ``intersection``."""
    def derivative(self, node: int, byte: int) -> int: ...
    def nullable(self, node: int) -> bool: ...
    def untagged(self, node: int) -> int: ...
    def text_depth(self, node: int) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def footprint(self) -> int:
        """Nodes plus the states of the substring leaves' suffix automata."""
    @property
    def memory_bytes(self) -> int:
        """The bytes its tables hold (vector capacities, hash-map entries): an estimate."""

class DerivativeDfa:
    """A grammar lexer's byte DFA over arena expressions, expanded natively (the expander of
    the LazyDfa of native_regex_core). Limits raise tokamata.LimitExceeded."""

    def __init__(self, arena: ExprArena, class_starts: npt.NDArray[np.int32], key_base: int, max_states: int,
                 max_seconds: float) -> None: ...
    def intern_state(self, node: int) -> int: ...
    def start(self, nodes: npt.NDArray[np.int32]) -> int:
        """The state of the alternation of ``nodes`` (added if new), or -1 for NOTHING."""
    def step(self, state: int, byte: int) -> int:
        """The next state, or -1 (dead)."""
    def ends(self, state: int) -> list[int]: ...
    def key(self, state: int) -> int: ...
    def text_depth(self, state: int) -> int: ...
    def accepting(self, state: int) -> bool: ...
    def accepting_from(self, first: int) -> bytes: ...
    @property
    def num_states(self) -> int: ...

class SharedEventCache:
    """Lexeme-boundary trie nodes by structural lexer-state key, shared by the grammars of one
    vocabulary."""

    def __init__(self, max_lists: int) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def evictions(self) -> int:
        """Entries dropped to make room (CLOCK: only those no constraint holds)."""

class GrammarRules:
    """A grammar's rules as flat arrays: rule ``r`` is ``lhs[r] -> rhs[rhs_offsets[r]:
    rhs_offsets[r + 1]]`` (terminal ``s >= 0``, nonterminal ``-(j + 1)``); ValueError when an
    index is out of range."""

    def __init__(self, lhs: npt.NDArray[np.int32], rhs_offsets: npt.NDArray[np.int32],
                 rhs: npt.NDArray[np.int32], num_nonterminals: int, num_terminals: int) -> None: ...
    @property
    def num_rules(self) -> int: ...
    def productive(self) -> bytes:
        """Per nonterminal, 1 when it derives some terminal string."""
    def nullable(self) -> bytes:
        """Per nonterminal, 1 when it derives the empty string."""
    def reachable(self, start: int, productive: bytes) -> bytes:
        """Per nonterminal, 1 when reachable from ``start`` through rules whose symbols are all
        productive."""

class EarleyCore:
    """Earley recognizer over terminal ids; parser states are int handles (0: the start)."""

    def __init__(self, rules: GrammarRules, start: int, max_items: int, max_sets: int) -> None: ...
    def scan(self, handle: int, terminal: int) -> int:
        """The state after ``terminal``, or -1; raises tokamata.LimitExceeded."""
    def accepting(self, handle: int) -> bool: ...
    def allowed_id(self, handle: int) -> int: ...
    def allowed(self, handle: int) -> list[int]: ...
    def allowed_by_id(self, id: int) -> list[int]: ...
    @property
    def num_sets(self) -> int:
        """Live sets (what ``max_sets`` bounds)."""
    @property
    def num_handles(self) -> int:
        """Handles allotted, live or released (released ones are reused)."""
    @property
    def num_built(self) -> int:
        """Sets built so far, released ones included."""

class GrammarCore:
    """A grammar's lexer DFA (a RegexCore) with its parser: inside rows and crossing walks."""

    def __init__(self, lexer: RegexCore, shared_events: SharedEventCache | None, parser: EarleyCore,
                 ignored: npt.NDArray[np.uint8], terminals: npt.NDArray[np.int32], lexer_dfa: DerivativeDfa,
                 max_mask_work: int = ...) -> None:
        """``terminals``: the arena id of each terminal tagged with its index (0: a special
        token); the walks make lexer start states from them natively (no callback into
        Python). ``max_mask_work``: steps one crossing walk may take (``LimitExceeded`` past
        it)."""
    def inside_row(self, state: int, out: npt.NDArray[np.uint32]) -> int:
        """Overwrite ``out`` with the tokens that keep lexer state ``state`` live."""
    def crossing(self, parser: int, state: int, out: npt.NDArray[np.uint32]) -> int:
        """OR into ``out`` the tokens that end the lexeme inside themselves and stay valid."""
    def plain_walk(self, parser: int, state: int, out: npt.NDArray[np.uint32]) -> int:
        """OR into ``out`` the inside row and the crossing of ``(parser, state)`` by one plain
        walk of the whole trie (what a lexer state's first mask takes)."""
    def start_of(self, parser: int) -> int:
        """The lexer state a lexeme starts in after parser state ``parser`` (-1: none), as
        the walks make it (natively, cached per allowed set)."""
    def num_events(self, state: int) -> int: ...
    def register_states(self, known: int, accepting: npt.NDArray[np.uint8], keys: npt.NDArray[np.int64]) -> None: ...
    @property
    def num_states(self) -> int: ...
    @property
    def num_event_lists(self) -> int: ...
    @property
    def walk_steps(self) -> int:
        """Steps taken by every crossing walk so far (``Limits.max_mask_work`` bounds one walk)."""
    @property
    def dense_walks(self) -> int:
        """Crossing walks that gave way to the plain DFS (lexemes abutting densely)."""
    @property
    def plain_walks(self) -> int:
        """Plain walks from the trie root that a lexer state's first mask took."""
    @property
    def scratch_fallbacks(self) -> int:
        """First-mask walks whose configuration sets outgrew the scratch cap and that finished
        with the per-configuration walk instead."""
    @staticmethod
    def set_plain_walk_scratch_cap(bytes: int) -> int:
        """Set the process-wide cap on a first-mask walk's scratch (default 64 MiB); returns the
        previous one. For tests."""

class ConstraintCore:
    """A constraint's positions: masks and advances for every matcher of it (strategy 0:
    regular, one lexer state per position; 1: Earley, lexer x parser configurations)."""

    def __init__(self, lexer: RegexCore, grammar: GrammarCore | None, initial_lexer: int, accepts_empty: bool,
                 special_offsets: npt.NDArray[np.int32], special_tokens: npt.NDArray[np.int32],
                 max_configurations: int, mask_cache_size: int) -> None: ...
    @property
    def strategy(self) -> int: ...
    @property
    def num_cached_masks(self) -> int: ...
    @property
    def num_distinct_masks(self) -> int: ...
    def sweep(self) -> int:
        """Release the parser states no live matcher holds; returns how many."""
    def set_sweep_threshold(self, live_states: int) -> None:
        """For tests: sweep at the end of every consume or fill that leaves at least this many
        parser states live (0: every one); negative: back to the automatic threshold."""
    @property
    def num_sweeps(self) -> int: ...
    @property
    def num_matchers(self) -> int:
        """Live matchers of this constraint."""
    @property
    def num_lexer_states(self) -> int: ...
    @property
    def num_cached_rows(self) -> int: ...
    @property
    def row_bytes(self) -> int:
        """Bytes held by the distinct cached masks and the lexer's cached rows, in their compact
        forms (a row is dense, or the words that differ from zeros, ones or a slice's row)."""
    @property
    def table_bytes(self) -> int:
        """Bytes held by the lexer DFA's transition table (state records, one target per own
        byte interval of each expanded state, the interned class-to-interval shapes)."""

class MatcherCore:
    """One sequence's position in a ConstraintCore, with its history; every method that may
    compute runs without the GIL."""

    def __init__(self, constraint: ConstraintCore, prefix: bytes = b"") -> None:
        """``prefix``: bytes the output must begin with (a prefix phase; token healing)."""
    def fill_bitmask(self, bitmask: Any, index: int) -> None: ...
    def fill_bitmask_budget(self, bitmask: Any, index: int, budget: int, max_states: int) -> None:
        """The row under a budget of ``budget`` >= 1 tokens, EOS included (without the GIL)."""
    def budget_needed(self, max_states: int) -> int:
        """Tokens (EOS included) within which the output can end; 0 terminated, 2**31 - 1 none known."""
    def consume(self, token: int) -> int:
        """0 accepted, 1 refused, 2 id out of range."""
    def consume_many(self, tokens: npt.NDArray[np.int32]) -> tuple[int, int]:
        """(tokens accepted before the first refusal, that refusal's status or 0)."""
    def rollback(self, n: int) -> int: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    @property
    def num_sweeps(self) -> int:
        """Sweeps of its constraint so far (a handle in ``position()`` is valid until the next)."""
    @property
    def history_length(self) -> int: ...
    @property
    def num_configurations(self) -> int: ...
    def position(self) -> list[tuple[int, int, bool]]:
        """The current configurations (parser, lexer, fresh)."""
    def copy(self) -> MatcherCore: ...
    def forced_tokens(self, max_tokens: int) -> list[int]:
        """At most ``max_tokens`` tokens, each the only one allowed at its step (no EOS)."""
    def forced_bytes(self, max_bytes: int) -> bytes:
        """At most ``max_bytes`` bytes every continuation of the output begins with."""
    def allowed_tokens(self) -> list[int]: ...
    def fill_draft(self, tokens: Sequence[int], bitmask: Any, start: int) -> int:
        """Rows ``start + i`` = the mask after ``tokens[:i]``, up to the first refused token's
        row; returns the rows written; the position is unchanged. ValueError for an id out
        of range (nothing written)."""
    def validate_draft(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` consume accepts; the position is unchanged. ValueError
        for an id out of range."""

def fill_bitmasks(matchers: Sequence[MatcherCore], bitmask: Any, indices: npt.NDArray[np.int32],
                  threads: int = 1) -> None:
    """Fill one bitmask row per matcher, without the GIL, on up to ``threads`` threads."""

def consume_tokens(matchers: Sequence[MatcherCore], tokens: npt.NDArray[np.int32], bitmask: Any | None,
                   indices: npt.NDArray[np.int32], status: npt.NDArray[np.uint8], threads: int = 1) -> None:
    """A batch's step: matcher i consumes ``tokens[i]`` (-1: none), then fills row ``indices[i]``
    when a bitmask is given, without the GIL, on up to ``threads`` threads; ``status[i]`` gets
    0 accepted, 1 refused, 3 failed (the first failed matcher's error is raised after the batch)."""

def fill_bitmasks_draft(matchers: Sequence[MatcherCore], tokens: npt.NDArray[np.int32],
                        offsets: npt.NDArray[np.int64], bitmask: Any, starts: npt.NDArray[np.int32],
                        threads: int = 1, accepting: npt.NDArray[np.uint8] | None = None) -> list[int]:
    """``fill_draft`` for each matcher (draft i = ``tokens[offsets[i]:offsets[i + 1]]``, rows
    from ``starts[i]``), without the GIL; returns the rows written per matcher."""

def apply_bitmask(logits: Any, bitmask: Any) -> None:
    """``logits[r, j] = -inf`` where bit j of ``bitmask`` row r is clear (float32/64, float16,
    bfloat16; columns a positive number of elements apart), without the GIL."""
def fill_bitmasks_budget(matchers: Sequence[MatcherCore], bitmask: Any, indices: npt.NDArray[np.int32],
                         budgets: npt.NDArray[np.int32], max_states: int, threads: int = 1) -> None:
    """fill_bitmasks with one token budget (>= 1) per matcher."""

class CanonicalTokenizer:
    """A byte-level BPE tokenizer's tables for the native canonical filter
    (tokamata.canonical_native): pretokenizer family 0 GPT-2, 1 Llama 3, 2 Qwen 2."""

    def __init__(self, family: int, ignore_merges: bool, token_bytes: npt.NDArray[np.uint8],
                 token_offsets: npt.NDArray[np.int64], has_bytes: npt.NDArray[np.uint8],
                 piece_bytes: npt.NDArray[np.uint8], piece_offsets: npt.NDArray[np.int64],
                 piece_ids: npt.NDArray[np.int32], merges: npt.NDArray[np.int32],
                 byte_symbols: npt.NDArray[np.int32], classes: npt.NDArray[np.int32],
                 added_bytes: npt.NDArray[np.uint8], added_offsets: npt.NDArray[np.int64],
                 added_ids: npt.NDArray[np.int32], eos: npt.NDArray[np.int32]) -> None: ...
    def region(self, text: bytes) -> tuple[list[tuple[int, int, int]], int] | None:
        """The pretokens ``(start, end, added id or -1)`` and the open region's start; None if
        not UTF-8."""
    def encode(self, text: bytes) -> list[int] | None: ...
    def bigram(self, a: int, b: int) -> bool: ...
    def bigram_traces(self, a: int, b: int) -> bool:
        """``bigram`` from the two tokens' merge traces, interleaved by rank (the same answer)."""
    def bigram_cached(self, a: int, b: int) -> bool:
        """``bigram_traces`` remembered in a per-``a`` row (process-wide per model)."""
    def char_group(self, ch: bytes) -> int:
        """The split-pattern group (0-15) of one non-ASCII character: characters of one group
        cut every text they end the same way; -1 a group of its own (U+017F, a character of an
        added text); -2 not one valid non-ASCII character."""
    def solo_alive(self, token: int) -> bool:
        """Stepping ``token`` from nothing open leaves its own bytes open (else dead)."""
    def solo_complete(self, token: int) -> bool:
        """The text of ``token`` is complete and encodes to exactly ``[token]``."""
    def solo_closes(self, token: int, byte: int) -> bool:
        """The single-token state of ``token`` followed by the ASCII character ``byte``: its
        text is one decided pretoken and ``token`` its encoding (by character key)."""

class CanonicalFilter:
    """The canonical filter of one constraint (states are ints, 0 the empty state); every
    method runs without the GIL."""

    def __init__(self, tokenizer: CanonicalTokenizer, constraint: ConstraintCore, max_search: int) -> None: ...
    def fill(self, matcher: MatcherCore, state: int, bitmask: Any, index: int) -> None: ...
    def allowed(self, matcher: MatcherCore, state: int) -> list[int]: ...
    def accept(self, matcher: MatcherCore, state: int, token: int) -> int:
        """The state after ``token``, or -1 when refused (EOS: ``state`` itself)."""
    def complete(self, state: int) -> bool: ...
    @property
    def num_states(self) -> int: ...
