"""Seed 003 Table 2: the skip rate (steps whose mask allows exactly one token, so a server can
append it without calling the model) on App. C's Pokedex template, canonical on and off.

No model: the steps are those of the tokenizer's own encoding (the exact reference encoder,
equal to ``tokenizers``; continuation mode) of filled-in template instances drawn with a fixed
seed. At each step a step is skippable when ``matcher.forced_tokens()`` is not empty (one
allowed token, EOS not counted); the final EOS step is not counted. Results go to
``benchmarks/experiments/skip_rate.json``; ``benchmarks/EXPERIMENTS.md`` quotes them.

Reading of App. C (its text is OCR'd): the template is one JSON line with ``", "`` between
members; ``description`` is ``[A-Z][a-z][0-9][\\w\\s,.!?]{1,3}`` with ``\\w\\s`` taken as ASCII
(``[A-Za-z0-9_ ]``: Unicode ``\\w`` lets the field hold any letter of any script, which the
paper's instances do not need); abilities are 1 to 7 of the 8 names.

With ``--model``, the instances are written by a model instead of drawn at random, as in seed
003 (which used Llama 2 7B): Gemma 3 270M (llama-cpp-python, CPU) fills the template under the
constraint (plain masks, sampling at temperature 0.8, one seed per instance), and the steps are
again those of each tokenizer's own encoding of the text it wrote. Random fields are strings
of random characters that tokenize into many one-character tokens; a model writes words.

Usage: ``python benchmarks/skip_rate.py [--instances N] [--tokenizers llama3,gemma3,llama2,mistral]
[--model [--reuse]]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "experiments" / "skip_rate.json"

TYPES = ["Bug", "Dark", "Dragon", "Electric", "Fairy", "Fighting", "Fire", "Flying", "Ghost", "Grass", "Ground",
         "Ice", "Normal", "Poison", "Psychic", "Rock", "Steel", "Stellar", "Water"]
STAGES = ["Basic", "Stage 1", "Stage 2"]
ABILITIES = ["Overgrow", "Blaze", "Torrent", "Shield Dust", "Intimidate", "Levitate", "Pressure", "Static"]
TAIL = "A-Za-z0-9_ ,.!?"


def _alt(items: list[str]) -> str:
    return "(" + "|".join(items) + ")"


TEMPLATE = (r'\{"alias": "[a-z]{1,5}", "description": "[A-Z][a-z][0-9][' + TAIL + r']{1,3}", '
            r'"type": "' + _alt(TYPES) + r'", "height_m": [0-9]{1,2}\.[0-9], "weight_kg": [0-9]{1,3}\.[0-9], '
            r'"evolution_stage": "' + _alt(STAGES) + r'", "legendary": "(true|false)", '
            r'"abilities": \["' + _alt(ABILITIES) + r'"(, "' + _alt(ABILITIES) + r'"){0,6}\]\}')


def instance(rng: random.Random) -> str:
    """A filled-in template (every field drawn uniformly from its pattern's shape)."""
    lower = "abcdefghijklmnopqrstuvwxyz"
    tail = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_ ,.!?"]
    alias = "".join(rng.choice(lower) for _ in range(rng.randint(1, 5)))
    description = (rng.choice(lower.upper()) + rng.choice(lower) + str(rng.randint(0, 9))
                   + "".join(rng.choice(tail) for _ in range(rng.randint(1, 3))))
    height = f"{rng.randint(0, 99)}.{rng.randint(0, 9)}"
    weight = f"{rng.randint(0, 999)}.{rng.randint(0, 9)}"
    abilities = ", ".join(f'"{a}"' for a in rng.sample(ABILITIES, rng.randint(1, 7)))
    return (f'{{"alias": "{alias}", "description": "{description}", "type": "{rng.choice(TYPES)}", '
            f'"height_m": {height}, "weight_kg": {weight}, "evolution_stage": "{rng.choice(STAGES)}", '
            f'"legendary": "{rng.choice(["true", "false"])}", "abilities": [{abilities}]}}')


PROMPT = ("<start_of_turn>user\nWrite one Pokedex entry for a new Pokemon as one line of JSON with the keys alias, "
          "description, type, height_m, weight_kg, evolution_stage, legendary and abilities."
          "<end_of_turn>\n<start_of_turn>model\n")


def model_instances(n: int) -> list[str]:
    """``n`` instances of the template written by Gemma 3 270M under the (plain) constraint."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.path.insert(0, str(ROOT / "tools"))
    import llama_cpp
    from demo_model import gemma3_270m_path

    import tokamata
    from tokamata.integrations.llama_cpp import generate, vocabulary

    llm = llama_cpp.Llama(str(gemma3_270m_path()), n_ctx=512, verbose=False, seed=0)
    constraint = tokamata.compile_regex(TEMPLATE, vocabulary(llm))
    texts = []
    for k in range(n):
        llm.reset()
        out = generate(llm, constraint, PROMPT, max_tokens=160, temperature=0.8, seed=k)
        if not out.finished:
            raise AssertionError(f"instance {k} did not finish within 160 tokens: {out.text!r}")
        texts.append(out.text)
    return texts


def _vocab(name: str):
    sys.path.insert(0, str(ROOT / "tests"))
    import real_tokenizers as real

    if name == "llama2":  # (seed 003's tokenizer: llama.cpp's vocabulary file of Llama 2)
        return real.ggml_vocab("llama-spm").vocab
    return getattr(real, name)().vocab


def measure(name: str, canonical: bool, texts: list[str]) -> dict:
    import tokamata

    vocab = _vocab(name)
    encode = vocab.exact_tokenizer().encode
    constraint = tokamata.compile_regex(TEMPLATE, vocab, canonical=canonical)
    steps = skippable = 0
    started = time.perf_counter()
    for text in texts:
        ids = encode(text)
        m = constraint.matcher()
        for t in ids:
            steps += 1
            skippable += bool(m.forced_tokens(1))
            if not m.consume(t):
                raise AssertionError(f"{name} canonical={canonical}: the encoding of {text!r} is refused at {t}")
        if not m.is_accepting():
            raise AssertionError(f"{name}: {text!r} does not end the template")
    return {"tokenizer": name, "canonical": canonical, "instances": len(texts), "steps": steps,
            "skippable": skippable, "skip_rate": skippable / steps, "seconds": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--tokenizers", default="llama3,gemma3")
    parser.add_argument("--model", action="store_true", help="instances written by Gemma 3 270M (see above)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --model: the texts the last --model run wrote (skip_rate_model.json)")
    args = parser.parse_args(argv)
    if args.model and args.reuse:
        texts = json.loads(OUT.with_name("skip_rate_model.json").read_text())["texts"][:args.instances]
    elif args.model:
        texts = model_instances(args.instances)
    else:
        rng = random.Random(3)
        texts = [instance(rng) for _ in range(args.instances)]
    import re

    assert all(re.fullmatch(TEMPLATE, t) for t in texts)
    rows = []
    for name in args.tokenizers.split(","):
        for canonical in (False, True):
            row = measure(name, canonical, texts)
            row["instances_from"] = "gemma3-270m" if args.model else "random"
            rows.append(row)
            print(f"{name:7s} canonical={str(canonical):5s} steps {row['steps']:5d} skippable {row['skippable']:5d} "
                  f"skip rate {row['skip_rate']:.1%} ({row['seconds']:.0f} s)", flush=True)
            OUT.parent.mkdir(exist_ok=True)
            out = OUT.with_name("skip_rate_model.json") if args.model else OUT
            out.write_text(json.dumps({"template": TEMPLATE, "seed": 3, "rows": rows,
                                       "texts": texts}, indent=1) + "\n")


if __name__ == "__main__":
    main()
