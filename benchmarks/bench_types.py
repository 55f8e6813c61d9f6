#!/usr/bin/env python
"""Time to first mask of ``tokamata.compile_type`` on 20 tool-call-shaped pydantic models, against
llguidance compiling ``Model.model_json_schema()``, in one process on Llama 3.

Usage: ``python benchmarks/bench_types.py [--repeats 7] [--cpu]``. For each model and each engine, each
repeat builds a fresh constraint and fills the first mask: tokamata with its caches cleared
before every compile (the vocabulary's trie stays, as in compare_ttfm.py), llguidance with a
fresh ``LLMatcher`` (its tokenizer built once). Both with compact JSON (no whitespace;
llguidance ``whitespace_flexible: false``). Prints the median of each and the ratio; also the
same for ``syntax="python"`` (tokamata only). ``--cpu`` times with the CPU time of the process
(``time.process_time``, every thread, user and system) instead of the wall clock: on a loaded
machine a compile longer than a scheduler slice waits for the CPU, which the wall clock counts
and CPU time does not. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import datetime
import enum
import os
import statistics
import sys
import time
import uuid
from typing import Annotated, Literal, Optional, Union

import numpy as np
from pydantic import BaseModel, Field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workload import llama3_tokenizer_path  # noqa: E402

import tokamata  # noqa: E402
from tokamata import trie as _trie  # noqa: E402


class Unit(str, enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class GetWeather(BaseModel):
    location: str = Field(description="City and country")
    unit: Unit = Unit.C


class WebSearch(BaseModel):
    query: str = Field(min_length=1, max_length=200)
    max_results: int = Field(default=5, ge=1, le=20)
    site: Optional[str] = None


class SendEmail(BaseModel):
    to: list[str] = Field(min_length=1, max_length=10)
    subject: str = Field(max_length=120)
    body: str
    cc: list[str] = []
    urgent: bool = False


class CreateEvent(BaseModel):
    title: str
    start: datetime.datetime
    end: datetime.datetime
    attendees: list[str] = []
    location: Optional[str] = None


class Transfer(BaseModel):
    from_account: str = Field(pattern=r"^[A-Z]{2}[0-9]{6}$")
    to_account: str = Field(pattern=r"^[A-Z]{2}[0-9]{6}$")
    amount: float = Field(gt=0, le=10000)
    currency: Literal["USD", "EUR", "GBP"]
    memo: Optional[str] = Field(default=None, max_length=64)


class SqlQuery(BaseModel):
    table: Literal["users", "orders", "products"]
    columns: list[str] = Field(min_length=1)
    where: Optional[str] = None
    limit: int = Field(default=100, ge=1, le=1000)


class Step(BaseModel):
    action: Literal["click", "type", "scroll"]
    selector: str
    text: Optional[str] = None


class BrowserPlan(BaseModel):
    url: str
    steps: list[Step] = Field(max_length=8)


class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class Rect(BaseModel):
    kind: Literal["rect"]
    width: float = Field(gt=0)
    height: float = Field(gt=0)


class Draw(BaseModel):
    shape: Union[Circle, Rect] = Field(discriminator="kind")
    color: str = Field(pattern=r"^#[0-9a-f]{6}$")


class Ticket(BaseModel):
    id: uuid.UUID
    priority: Annotated[int, Field(ge=1, le=5)]
    tags: list[str] = []
    assignee: Optional[str] = None
    status: Literal["open", "closed", "pending"] = "open"


class FileNode(BaseModel):
    name: str
    children: list["FileNode"] = []


class MakeTree(BaseModel):
    root: FileNode
    overwrite: bool = False


class BookFlight(BaseModel):
    origin: str = Field(pattern=r"^[A-Z]{3}$")
    destination: str = Field(pattern=r"^[A-Z]{3}$")
    depart: datetime.date
    return_date: Optional[datetime.date] = None
    passengers: int = Field(default=1, ge=1, le=9)
    cabin: Literal["economy", "premium", "business", "first"] = "economy"


class CreateIssue(BaseModel):
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    title: str = Field(min_length=1, max_length=256)
    body: Optional[str] = None
    labels: list[str] = Field(default=[], max_length=10)
    assignees: list[str] = []


class Repeat(str, enum.Enum):
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


class SetReminder(BaseModel):
    text: str = Field(max_length=500)
    at: datetime.datetime
    repeat: Optional[Repeat] = None


class Calculate(BaseModel):
    expression: str = Field(max_length=200)
    precision: int = Field(default=6, ge=0, le=15)


class Translate(BaseModel):
    text: str
    source_lang: Optional[str] = Field(default=None, pattern=r"^[a-z]{2}$")
    target_lang: str = Field(pattern=r"^[a-z]{2}$")
    formality: Literal["formal", "informal"] = "formal"


class Address(BaseModel):
    street: str
    city: str
    zip: str = Field(pattern=r"^[0-9]{5}$")


class OrderPizza(BaseModel):
    size: Literal["small", "medium", "large"]
    toppings: list[Literal["cheese", "ham", "mushroom", "olive", "pepper"]] = Field(default=[], max_length=5)
    quantity: int = Field(default=1, ge=1, le=20)
    address: Address
    deliver_at: Optional[datetime.time] = None


class SmartHome(BaseModel):
    device_id: str
    action: Literal["on", "off", "set"]
    brightness: Optional[int] = Field(default=None, ge=0, le=100)
    color: Optional[str] = Field(default=None, pattern=r"^#[0-9a-fA-F]{6}$")


class AddContact(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    phone: str = Field(pattern=r"^\+?[0-9 ()-]{7,20}$")
    birthday: Optional[datetime.date] = None
    notes: Optional[str] = None
    favorite: bool = False


class StockQuote(BaseModel):
    symbols: list[Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]] = Field(min_length=1, max_length=10)
    interval: Literal["1d", "1wk", "1mo"] = "1d"
    start: datetime.date
    end: Optional[datetime.date] = None


class HttpRequest(BaseModel):
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH"]
    url: str = Field(max_length=2048)
    headers: dict[str, str] = {}
    body: Optional[str] = None
    timeout: float = Field(default=10, gt=0, le=60)


MODELS = [GetWeather, WebSearch, SendEmail, CreateEvent, Transfer, SqlQuery, BrowserPlan, Draw, Ticket, MakeTree,
          BookFlight, CreateIssue, SetReminder, Calculate, Translate, OrderPizza, SmartHome, AddContact, StockQuote,
          HttpRequest]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cpu", action="store_true", help="CPU time of the process instead of the wall clock")
    args = ap.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    import llguidance
    import llguidance.numpy as lln

    path = llama3_tokenizer_path()
    vocab = tokamata.Vocabulary.from_tokenizer_json(path, eos_token_ids=[128009])
    with open(path, encoding="utf-8") as f:
        tokenizer = llguidance.LLTokenizer(f.read(), n_vocab=vocab.size, eos_token=128009)
    buf = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)

    def ours(model, syntax):
        tokamata.clear_caches(vocab)
        _trie.shared_rows(vocab)
        t0 = clock()
        tokamata.compile_type(model, vocab, syntax=syntax).matcher().fill_bitmask(buf, 0)
        return clock() - t0

    def theirs(model):
        t0 = clock()
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            model.model_json_schema(), overrides={"whitespace_flexible": False})
        m = llguidance.LLMatcher(tokenizer, grammar, log_level=1)
        if m.is_error():
            raise RuntimeError(m.get_error())
        lln.fill_next_token_bitmask(m, buf, 0)
        return clock() - t0

    ours(GetWeather, "json"), theirs(GetWeather)  # warm imports
    print(f"ms ({'CPU time' if args.cpu else 'wall clock'}), median (min) of {args.repeats}, the three interleaved")
    print(f"{'model':<12} {'tokamata json':>16} {'llguidance':>16} {'ratio':>6} {'tokamata python':>16}")
    ratios = []
    for model in MODELS:
        times: list[list[float]] = [[], [], []]
        for _ in range(args.repeats):  # interleaved: a slow moment of the machine falls on all three
            times[0].append(ours(model, "json") * 1e3)
            times[1].append(theirs(model) * 1e3)
            times[2].append(ours(model, "python") * 1e3)
        a, b, c = (statistics.median(t) for t in times)
        ratios.append(a / b)
        shown = [f"{statistics.median(t):.2f} ({min(t):.2f})" for t in times]
        print(f"{model.__name__:<12} {shown[0]:>16} {shown[1]:>16} {a / b:>6.2f} {shown[2]:>16}")
    print(f"median ratio tokamata json / llguidance: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
