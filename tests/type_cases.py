"""Python types for ``tokamata.compile_type`` tests, as data: each case is a name, the type,
a hypothesis strategy of its values, and the ``approximate`` names each syntax needs.

Classes are defined at module level so that their forward references resolve.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal, NamedTuple, NotRequired, Optional, Required, TypedDict, Union

from annotated_types import Ge, Gt, Le, Len, Lt, MaxLen, MinLen, MultipleOf
from hypothesis import strategies as st
from pydantic import BaseModel, Field

# ------------------------------------------------------------------------------- classes


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mode(enum.StrEnum):
    READ = "r"
    WRITE = "w"


@dataclass
class Point:
    x: int
    y: float


@dataclass
class Defaults:
    name: str
    tags: list[str] = field(default_factory=list)
    score: Annotated[int, Ge(0), Le(10)] = 5
    note: Optional[str] = None


@dataclass
class Tree:
    label: Annotated[str, MaxLen(6)]
    children: list[Tree] = field(default_factory=list)


@dataclass
class Chain:
    value: int
    next: Optional[Chain] = None


class Movie(TypedDict):
    title: str
    year: Annotated[int, Ge(1888), Le(2100)]
    rating: NotRequired[float]


class PartialMovie(TypedDict, total=False):
    title: Required[str]
    sequel: bool


class Coord(NamedTuple):
    lat: Annotated[float, Ge(-90), Le(90)]
    lon: Annotated[float, Ge(-180), Le(180)]
    label: str = ""


class Customer(BaseModel):
    name: str = Field(min_length=1, max_length=20)
    email: str = Field(pattern=r"^[a-z]+@[a-z]+\.com$")


@dataclass
class LineItem:
    sku: Annotated[str, Len(3, 6)]
    quantity: Annotated[int, Gt(0), Lt(1000)]
    price: Annotated[Decimal, Ge(0), MultipleOf(Decimal("0.01"))]


@dataclass
class Order:
    id: uuid.UUID
    customer: Customer
    items: Annotated[list[LineItem], MinLen(1), MaxLen(4)]
    status: Color = Color.RED
    placed: Optional[datetime.datetime] = None


class SearchTool(BaseModel):
    query: str = Field(min_length=1, max_length=40, alias="q")
    limit: int = Field(default=10, ge=1, le=50)
    site: Optional[str] = None


class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class Square(BaseModel):
    kind: Literal["square"]
    side: int = Field(ge=1, le=100)


class Drawing(BaseModel):
    shapes: list[Union[Circle, Square]] = Field(max_length=3)
    main: Union[Circle, Square] = Field(discriminator="kind")


class Category(BaseModel):
    name: str
    children: list[Category] = []


class Event(BaseModel):
    id: uuid.UUID
    at: datetime.datetime
    day: datetime.date
    cost: Decimal
    mode: Mode


@dataclass
class Wrapper:
    tool: SearchTool
    extra: dict[str, int] = field(default_factory=dict)


class Outer:
    @dataclass
    class Inner:
        flag: bool


# ---------------------------------------------------------------------------- strategies

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
DECIMALS = st.decimals(allow_nan=False, allow_infinity=False)
SHORT = st.text(max_size=8)
NAMES = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="\\"), max_size=6)


def _trees(depth: int = 2):
    labels = st.text(max_size=6)
    if depth == 0:
        return st.builds(Tree, labels, st.just([]))
    return st.builds(Tree, labels, st.lists(st.deferred(lambda: _trees(depth - 1)), max_size=2))


def _chains():
    return st.recursive(st.builds(Chain, st.integers(), st.none()),
                        lambda inner: st.builds(Chain, st.integers(), inner), max_leaves=4)


def _categories():
    return st.recursive(st.builds(Category, name=SHORT, children=st.just([])),
                        lambda inner: st.builds(Category, name=SHORT, children=st.lists(inner, max_size=2)),
                        max_leaves=4)


CUSTOMERS = st.builds(Customer, name=st.text(min_size=1, max_size=20),
                      email=st.from_regex(r"[a-z]{1,5}@[a-z]{1,5}\.com", fullmatch=True))
LINE_ITEMS = st.builds(LineItem, sku=st.text(min_size=3, max_size=6), quantity=st.integers(1, 999),
                       price=st.integers(0, 10**6).map(lambda c: Decimal(c) / 100))
SEARCH = st.builds(SearchTool, q=st.text(min_size=1, max_size=40), limit=st.integers(1, 50),
                   site=st.none() | SHORT)
CIRCLES = st.builds(Circle, kind=st.just("circle"), radius=st.floats(min_value=0, exclude_min=True,
                                                                      allow_infinity=False))
SQUARES = st.builds(Square, kind=st.just("square"), side=st.integers(1, 100))
DATETIMES = st.datetimes() | st.datetimes(timezones=st.just(datetime.timezone.utc))

NONE: frozenset[str] = frozenset()
UNIQUE = frozenset({"uniqueItems"})


@dataclasses.dataclass(frozen=True)
class TypeCase:
    name: str
    tp: Any
    values: Any  # a hypothesis strategy
    python_approximate: frozenset[str] = NONE  # approximate= for syntax="python"
    gemma: bool = False  # also on Gemma 3


CASES = [
    TypeCase("int", int, st.integers(), gemma=True),
    TypeCase("int_range", Annotated[int, Ge(-5), Le(300)], st.integers(-5, 300)),
    TypeCase("int_multiple", Annotated[int, MultipleOf(3), Gt(0)], st.integers(1, 10**6).map(lambda n: 3 * n)),
    TypeCase("float", float, FLOATS, gemma=True),
    TypeCase("float_range", Annotated[float, Ge(0), Lt(1)], st.floats(0, 1, exclude_max=True)),
    TypeCase("str", str, st.text(), gemma=True),
    TypeCase("str_len", Annotated[str, MinLen(1), MaxLen(8)], st.text(min_size=1, max_size=8)),
    TypeCase("str_pattern", Annotated[str, Field(pattern=r"^[a-z]+[0-9]$")],
             st.from_regex(r"[a-z]{1,6}[0-9]", fullmatch=True)),
    TypeCase("bool", bool, st.booleans()),
    TypeCase("none", type(None), st.none()),
    TypeCase("decimal", Decimal, DECIMALS),
    TypeCase("decimal_bounded", Annotated[Decimal, Ge(0), Le(100), MultipleOf(Decimal("0.01"))],
             st.integers(0, 10000).map(lambda c: Decimal(c) / 100)),
    TypeCase("datetime", datetime.datetime, DATETIMES, gemma=True),
    TypeCase("date", datetime.date, st.dates()),
    TypeCase("time", datetime.time, st.times()),
    TypeCase("uuid", uuid.UUID, st.uuids()),
    TypeCase("enum", Color, st.sampled_from(Color), gemma=True),
    TypeCase("int_enum", Priority, st.sampled_from(Priority)),
    TypeCase("str_enum", Mode, st.sampled_from(Mode)),
    TypeCase("literal", Literal["a", "b", 3, True, None], st.sampled_from(["a", "b", 3, True, None])),
    TypeCase("optional", Optional[int], st.none() | st.integers()),
    TypeCase("union_pipe", int | str, st.integers() | st.text()),
    TypeCase("union_classes", Union[Point, Color, None],
             st.none() | st.sampled_from(Color) | st.builds(Point, st.integers(), FLOATS)),
    TypeCase("list", list[int], st.lists(st.integers())),
    TypeCase("list_len", Annotated[list[str], MinLen(1), MaxLen(3)], st.lists(SHORT, min_size=1, max_size=3)),
    TypeCase("tuple_fixed", tuple[int, str, bool], st.tuples(st.integers(), SHORT, st.booleans())),
    TypeCase("tuple_variadic", tuple[int, ...], st.lists(st.integers(), max_size=4).map(tuple)),
    TypeCase("tuple_empty", tuple[()], st.just(())),
    TypeCase("set_literal", set[Literal[1, 2, 3]], st.sets(st.sampled_from([1, 2, 3])), UNIQUE),
    TypeCase("frozenset_enum", frozenset[Color], st.frozensets(st.sampled_from(Color)), UNIQUE),
    TypeCase("dict", dict[str, int], st.dictionaries(SHORT, st.integers(), max_size=3)),
    TypeCase("dict_nested", dict[str, list[Point]],
             st.dictionaries(SHORT, st.lists(st.builds(Point, st.integers(), FLOATS), max_size=2), max_size=2)),
    TypeCase("dataclass", Point, st.builds(Point, st.integers(), FLOATS), gemma=True),
    TypeCase("dataclass_defaults", Defaults,
             st.builds(Defaults, SHORT, st.lists(SHORT, max_size=2), st.integers(0, 10), st.none() | SHORT)),
    TypeCase("recursive_tree", Tree, _trees(), gemma=True),
    TypeCase("recursive_chain", Chain, _chains()),
    TypeCase("typeddict", Movie, st.fixed_dictionaries(
        {"title": SHORT, "year": st.integers(1888, 2100)}, optional={"rating": FLOATS})),
    TypeCase("typeddict_partial", PartialMovie, st.fixed_dictionaries(
        {"title": SHORT}, optional={"sequel": st.booleans()})),
    TypeCase("namedtuple", Coord, st.builds(Coord, st.floats(-90, 90), st.floats(-180, 180), SHORT)),
    TypeCase("nested_order", Order, st.builds(
        Order, st.uuids(), CUSTOMERS, st.lists(LINE_ITEMS, min_size=1, max_size=4), st.sampled_from(Color),
        st.none() | DATETIMES), gemma=True),
    TypeCase("pydantic_tool", SearchTool, SEARCH, gemma=True),
    TypeCase("pydantic_discriminated", Drawing, st.builds(
        Drawing, shapes=st.lists(CIRCLES | SQUARES, max_size=3), main=CIRCLES | SQUARES)),
    TypeCase("pydantic_recursive", Category, _categories()),
    TypeCase("pydantic_scalars", Event, st.builds(
        Event, id=st.uuids(), at=DATETIMES, day=st.dates(), cost=DECIMALS, mode=st.sampled_from(Mode))),
    TypeCase("dataclass_with_pydantic", Wrapper, st.builds(
        Wrapper, SEARCH, st.dictionaries(SHORT, st.integers(), max_size=2))),
    TypeCase("nested_class", Outer.Inner, st.builds(Outer.Inner, st.booleans())),
    TypeCase("list_of_optional_enum", list[Optional[Mode]], st.lists(st.none() | st.sampled_from(Mode), max_size=3)),
]

BY_NAME = {case.name: case for case in CASES}
