"""Type stubs for tokamata._core, the C++ extension (nanobind).

Plain data only: flat uint8/int32/int64 numpy arrays in, caller-owned int32 bitmasks out.
"""

from typing import Any, Callable, Sequence

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

class SharedRowCache:
    """Token rows by structural state key, shared by the constraints of one vocabulary."""

    def __init__(self, max_rows: int) -> None: ...
    @property
    def size(self) -> int: ...

class RegexCore:
    """A lazily expanded byte DFA bound to a trie, with its per-state token rows."""

    def __init__(self, trie: TokenTrie, shared_rows: SharedRowCache | None, class_map: npt.NDArray[np.uint8],
                 num_classes: int, initial_accepting: npt.NDArray[np.uint8], initial_keys: npt.NDArray[np.int64],
                 eos_ids: npt.NDArray[np.int32], max_states: int,
                 expand: Callable[[int, int, int], tuple[bytes, bytes, bytes]]) -> None: ...
    @property
    def num_states(self) -> int: ...
    @property
    def num_cached_rows(self) -> int: ...

class MatcherCore:
    def __init__(self, core: RegexCore) -> None: ...
    def fill_bitmask(self, bitmask: Any, index: int) -> None: ...
    def consume(self, token: int) -> int:
        """0 accepted, 1 refused, 2 id out of range."""
    def rollback(self, n: int) -> int: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    @property
    def state(self) -> int: ...
    @property
    def history_length(self) -> int: ...
    def copy(self) -> MatcherCore: ...
    def allowed_tokens(self) -> list[int]: ...

def fill_bitmasks(matchers: Sequence[MatcherCore], bitmask: Any, indices: npt.NDArray[np.int32]) -> None:
    """Fill one bitmask row per matcher, without the GIL."""
