"""Work per grammar mask stays polynomial where lexemes abut (issue 20, "No cliffs").

In a grammar whose atoms may abut (Lisp symbols and numbers with nothing between them; Python
keywords and names where spaces are optional), a symbol-like token splits into atoms in
exponentially many ways. Masks must not explore them one by one: parser states are merged by
content and a crossing walk steps each (trie node, configuration) pair a bounded number of
times. Checked by the steps the walks count (``GrammarCore.walk_steps``, what
``Limits.max_mask_work`` bounds), never by time: every mask along real Lisp and Python-like
texts on Llama 3 stays within a small multiple of the trie's size, where splitting token by
token took billions of steps (20-35 s per mask).
"""

from __future__ import annotations

import pytest

import tokamata
from tokamata.trie import core_trie

from real_tokenizers import llama3

SEXP = r"""
start: datum+
?datum: atom | list | vector | quoted
list: "(" datum* ")"
vector: "[" datum* "]"
quoted: QUOTE datum
atom: SYMBOL | NUMBER | STRING
QUOTE: "'" | "`" | ",@" | ","
SYMBOL: /[A-Za-z_+\-*\/<>=!?&%.:][A-Za-z0-9_+\-*\/<>=!?&%.:#]*/
NUMBER: /-?[0-9]+(\.[0-9]+)?/
STRING: /"(?:[^"\\\n]|\\[^\n])*"/
COMMENT: /;[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""

# keywords are literals that NAME also matches, and spaces are optional: "ifx" is "if x"
PYTHON_LIKE = r"""
start: line ("\n" line)*
line: NAME "=" expr | "if" expr ":" line | "for" NAME "in" expr ":" line | "return" expr
?expr: expr "if" expr "else" expr | expr ("and" | "or") expr | "not" expr | expr "(" expr? ")" | NAME | NUMBER
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+/
%ignore " "
"""

CASES = [
    (SEXP, "(defun my-map (f xs)\n  (if (null xs) nil (cons (funcall f (car xs)) (my-map f (cdr xs)))))"),
    (SEXP, "(let ((a 1) (b 2.5) (name \"Ada\")) `(list ,a ,@b 'c)) ; done"),
    (PYTHON_LIKE, "for item in items: if not item: return default(item)\nx = y if y else z"),
]


@pytest.mark.parametrize("grammar, text", CASES)
def test_mask_work_is_bounded_where_lexemes_abut(grammar: str, text: str) -> None:
    tok = llama3()
    constraint = tokamata.compile_grammar(grammar, tok.vocab)
    walks = constraint.grammar_core
    nodes = core_trie(tok.vocab).num_nodes
    bitmask = tokamata.allocate_bitmask(1, tok.vocab.size)
    matcher = constraint.matcher()
    for token in tok.encode(text):
        before = walks.walk_steps
        matcher.fill_bitmask(bitmask, 0)
        # a few walks per mask (one per configuration), each at most about nodes x configurations
        assert walks.walk_steps - before <= 24 * nodes
        assert bitmask[0, token // 32] >> (token % 32) & 1
        assert matcher.consume(token)
    assert matcher.is_accepting()
    # the plain DFS from the root did the work where lexemes abut: a lexer state's first mask
    # takes it, and an event-indexed crossing gives way to it past the trie's size
    assert walks.plain_walks + walks.dense_walks > 0
