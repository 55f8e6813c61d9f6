"""A pydantic model's schema in compile_type is pydantic's own, less what the grammar never reads.

tokamata.syntax.types.schema makes pydantic's JSON Schema with its own generator: scalars
(dates, times, UUIDs, decimals) spelled its way, no ``default`` annotation (pydantic encodes
each default through a new TypeAdapter), no alphabetical key sort, and the generator's method
table bound lazily. For models without those scalars the schema must equal pydantic's default
``model_json_schema`` with every ``default`` removed, ``properties`` in field order, and the
grammar must not change when the defaults are put back (masks compared on Llama 3).
"""

from __future__ import annotations

import enum
from typing import Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

import real_tokenizers
import tokamata
from tokamata.syntax.types import describe, to_schema
from type_cases import Customer, Drawing, SearchTool


class Unit(str, enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class Address(BaseModel):
    street: str
    zip_code: str = Field(default="00000", pattern=r"^[0-9]{5}$", alias="zip")


class Weather(BaseModel):
    location: str = Field(description="City")
    unit: Unit = Unit.C
    days: int = Field(default=3, ge=1, le=14)
    tags: list[str] = []
    home: Optional[Address] = None
    ratio: float = Field(default=0.5, gt=0, lt=1)
    mode: Literal["fast", "slow"] = "fast"
    extra: dict[str, int] = Field(default_factory=dict)
    choice: Union[int, str] = 0


class Node(BaseModel):
    name: str = "root"
    children: list["Node"] = []


MODELS = [Weather, Address, Node, Customer, Drawing, SearchTool]


def _without_defaults(value):
    if isinstance(value, dict):
        return {k: _without_defaults(v) for k, v in value.items() if k != "default"}
    if isinstance(value, list):
        return [_without_defaults(v) for v in value]
    return value


def _property_orders(value, out, path=""):
    if isinstance(value, dict):
        if isinstance(value.get("properties"), dict):
            out[path] = list(value["properties"])
        for k, v in value.items():
            _property_orders(v, out, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _property_orders(v, out, f"{path}/{i}")
    return out


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_schema_is_pydantics_without_defaults(model):
    ours = to_schema(describe(model, tokamata.Limits()))
    theirs = model.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    # to_schema makes every class a definition, the root one included (pydantic's body of a
    # recursive model is a definition already)
    definitions = theirs.pop("$defs", {})
    name = ours["$ref"].rsplit("/", 1)[1]
    body = definitions[name] if set(theirs) == {"$ref"} else theirs
    theirs = {"$ref": ours["$ref"], "$defs": {**definitions, name: body}}
    assert ours == _without_defaults(theirs)
    assert _property_orders(ours, {}) == _property_orders(_without_defaults(theirs), {})
    assert "'default'" not in str(ours)


@pytest.fixture(scope="module")
def vocab():
    return real_tokenizers.llama3().vocab


def test_defaults_do_not_change_the_masks(vocab):
    schema = Weather.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    assert "default" in str(schema)
    ours = tokamata.compile_type(Weather, vocab)
    reference = tokamata.compile_json_schema(schema, vocab, strict=True)  # (compile_type closes pydantic objects)
    text = tokamata.dumps(Weather(location="Oslo", home=Address(street="Main 1", zip="01234"), tags=["a"],
                                  extra={"k": 2}, choice="x"), Weather)
    tokens = real_tokenizers.llama3().encode(text)
    a, b = ours.matcher(), reference.matcher()
    for token in tokens:
        assert a.allowed_tokens().tolist() == b.allowed_tokens().tolist()
        assert a.consume(token) and b.consume(token)
    assert a.is_accepting() and b.is_accepting()
