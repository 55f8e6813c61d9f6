"""``tokamata.compile_type`` on bad input: each a precise tokamata error with where it is
(``path``), and the arguments checked."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Optional

import pytest
from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen, MultipleOf, Predicate
from pydantic import BaseModel, Field

import tokamata

VOCAB = tokamata.Vocabulary.from_token_bytes([bytes([b]) for b in range(128)] + [None], eos_token_ids=[128])


@dataclass
class Sku:
    code: bytes


@dataclass
class Line:
    sku: Sku


@dataclass
class Order:
    items: list[Line]


@dataclass
class Endless:
    name: str
    next: Endless


@dataclass
class EndlessPair:
    left: EndlessOther


@dataclass
class EndlessOther:
    right: EndlessPair


@dataclass
class Dangling:
    x: Missing  # type: ignore[name-defined]  # noqa: F821


@dataclass
class Opaque:
    callback: Callable[[int], int]


class Bad(BaseModel):
    x: int = Field(ge=5, le=1)


@dataclass
class HasDict:
    table: dict[int, str]


UNSUPPORTED = [  # (type, keyword, path)
    (Order, "bytes", "Order.items[].sku.code"),
    (Opaque, "Callable[[int], int]", "Opaque.callback"),
    (HasDict, "int", "HasDict.table{key}"),
    (Any, "Any", "Any"),
    (list, "list", "list"),
    (Optional[complex], "complex", "Optional[complex]"),
    (Annotated[int, Predicate(lambda x: x > 0)], "Predicate", "Annotated[int, Predicate("),
]


@pytest.mark.parametrize("tp,keyword,path", UNSUPPORTED)
@pytest.mark.parametrize("syntax", ["json", "python"])
def test_unsupported_types_name_type_and_path(tp: Any, keyword: str, path: str, syntax: str) -> None:
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_type(tp, VOCAB, syntax=syntax)
    assert info.value.keyword == keyword
    assert info.value.path is not None and info.value.path.startswith(path)
    assert info.value.path in str(info.value)


INVALID = [  # (type, path, words of the message)
    (Endless, "Endless", "no finite value"),
    (EndlessPair, "EndlessPair", "no finite value"),
    (Dangling, "Dangling", "Missing"),
    (Annotated[int, Ge(5), Le(1)], "Annotated[int, Ge(ge=5), Le(le=1)]", "leave no value"),
    (Annotated[int, Gt(1), Lt(2)], "Annotated[int, Gt(gt=1), Lt(lt=2)]", "leave no value"),
    (Annotated[int, Ge(1), Le(2), MultipleOf(5)], "Annotated[int, Ge(ge=1), Le(le=2), MultipleOf(multiple_of=5)]",
     "leave no value"),
    (Annotated[float, Gt(1.5), Le(1.5)], "Annotated[float, Gt(gt=1.5), Le(le=1.5)]", "leave no value"),
    (Annotated[str, MinLen(5), MaxLen(2)], "Annotated[str, MinLen(min_length=5), MaxLen(max_length=2)]",
     "min_length 5 > max_length 2"),
    (Annotated[str, Ge(1)], "Annotated[str, Ge(ge=1)]", "do not apply"),
    (Annotated[int, MultipleOf(0)], "Annotated[int, MultipleOf(multiple_of=0)]", "positive"),
    (Bad, "Bad.x", "leave no value"),
    ("Point", "Point", "forward reference"),
]


@pytest.mark.parametrize("tp,path,words", INVALID)
@pytest.mark.parametrize("syntax", ["json", "python"])
def test_invalid_types(tp: Any, path: str, words: str, syntax: str) -> None:
    with pytest.raises(tokamata.InvalidType) as info:
        tokamata.compile_type(tp, VOCAB, syntax=syntax)
    assert info.value.path == path
    assert words in info.value.message
    again = pickle.loads(pickle.dumps(info.value))
    assert again.path == path and str(again) == str(info.value)


def test_python_sets_need_approximation() -> None:
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_type(dict[str, set[int]], VOCAB, syntax="python")
    assert (info.value.keyword, info.value.path) == ("uniqueItems", "dict[str, set[int]]{}")
    c = tokamata.compile_type(set[int], VOCAB, syntax="python", approximate={"uniqueItems"})
    assert c.parse("{1, 2}") == {1, 2}
    with pytest.raises(tokamata.ParseError):
        c.parse("{1, 1}")


def test_json_sets_of_infinite_items_are_refused_unless_approximated() -> None:
    with pytest.raises(tokamata.Unsupported) as info:
        tokamata.compile_type(set[int], VOCAB)
    assert info.value.keyword == "uniqueItems"
    c = tokamata.compile_type(set[int], VOCAB, approximate={"uniqueItems"})
    assert c.report() and c.parse("[3,1]") == {1, 3}


def test_recursion_is_bounded_by_limits() -> None:
    tp: Any = int
    for _ in range(30):
        tp = list[tp]
    with pytest.raises(tokamata.LimitExceeded) as info:
        tokamata.compile_type(tp, VOCAB, limits=tokamata.Limits(max_nesting_depth=10))
    assert info.value.limit == "max_nesting_depth"
    c = tokamata.compile_type(list[int], VOCAB, syntax="python")
    with pytest.raises(tokamata.LimitExceeded):
        tokamata.compile_type(list[int], VOCAB, syntax="python",
                              limits=tokamata.Limits(max_json_depth=3)).parse("[" * 10)
    with pytest.raises(tokamata.ParseError):
        c.parse("[" * 100)


def test_arguments_checked() -> None:
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_type(int, VOCAB, syntax="yaml")
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_type(int, VOCAB, syntax="python", whitespace="flexible")
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_type(int, object())
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_type(int, VOCAB, approximate="uniqueItems")
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_type(int, VOCAB).parse(12)  # type: ignore[arg-type]
    with pytest.raises(tokamata.InvalidArgument):
        tokamata.compile_regex("a", VOCAB).parse("a")
    with pytest.raises(tokamata.InvalidArgument) as info:
        tokamata.dumps(float("nan"), dict[str, float])
    with pytest.raises(tokamata.InvalidArgument) as info:
        tokamata.dumps({"a": "x"}, dict[str, int])
    assert info.value.path == "dict[str, int]"


def test_whitespace_options_of_json() -> None:
    @dataclass
    class P:
        x: int
        y: list[int] = dataclasses.field(default_factory=list)

    pretty = tokamata.compile_type(P, VOCAB, whitespace="pretty")
    text = tokamata.dumps(P(1, [2]), P, whitespace="pretty")
    assert text == '{\n  "x": 1,\n  "y": [\n    2\n  ]\n}'
    m = pretty.matcher()
    assert m.consume_many(list(text.encode())) == len(text) and m.is_accepting()
    assert pretty.parse(text) == P(1, [2])
    flexible = tokamata.compile_type(P, VOCAB, whitespace="flexible")
    m = flexible.matcher()
    spaced = '{ "x" : 1 }'
    assert m.consume_many(list(spaced.encode())) == len(spaced) and m.is_accepting()
    assert flexible.parse(spaced) == P(1)
