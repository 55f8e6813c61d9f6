"""tokamata: exact, fast constrained decoding over real tokenizers.

A constraint (a regex, a grammar, JSON) becomes a byte automaton; composed with the vocabulary's byte
trie it yields, at each decoding step, the exact set of tokens that keep the output
extendable to a full match.

>>> import tokamata
>>> vocab = tokamata.Vocabulary.from_token_bytes([b"Y", b"es", b"No", b"Yes", None], eos_token_ids=[4])
>>> m = tokamata.compile_regex("Yes|No", vocab).matcher()
>>> m.allowed_tokens().tolist()
[0, 2, 3]
>>> m.consume(3), m.is_accepting(), m.allowed_tokens().tolist()
(True, True, [4])

``import tokamata`` never imports torch or transformers.
"""

from .bitmask import allocate_bitmask, unpack_bitmask
from .caches import CacheBounds, cache_bounds, cache_bytes, clear_caches, set_cache_bounds
from .compile import (compile_choice, compile_gbnf, compile_grammar, compile_grammar_ir, compile_json,
                      compile_json_schema, compile_regex, compile_structural_tag, compile_type, dumps)
from .constraint import Constraint
from .constraint_cache import ConstraintCache
from .integrations.apply import apply_bitmask
from .healing import heal
from .errors import (InvalidArgument, InvalidSyntax, InvalidType, LimitExceeded, ParseError, SchemaError,
                     TokamataError, Unsupported, VocabularyError)
from .limits import Limits
from .matcher import Matcher, consume_tokens, fill_bitmasks, fill_bitmasks_draft
from .vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "Constraint", "ConstraintCache", "Matcher", "Vocabulary", "Limits", "compile_regex", "clear_caches",
    "CacheBounds", "cache_bounds", "cache_bytes", "set_cache_bounds", "allocate_bitmask", "apply_bitmask", "unpack_bitmask", "fill_bitmasks",
    "fill_bitmasks_draft", "consume_tokens",
    "compile_grammar", "compile_gbnf", "compile_json", "compile_json_schema", "compile_grammar_ir", "compile_choice",
    "compile_structural_tag",
    "compile_type", "dumps",
    "TokamataError", "InvalidSyntax", "Unsupported", "SchemaError", "LimitExceeded", "VocabularyError",
    "InvalidArgument", "InvalidType", "ParseError", "heal",
]
