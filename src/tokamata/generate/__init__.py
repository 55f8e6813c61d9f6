"""Generation with probabilities (seed 003, section 5.1 and App. A): a :class:`Pipeline` over a
model generates under a constraint and reports, for every token, the model's own
(unconstrained) and the constraint's (constrained) log-probability; it scores given token
sequences the same way, and computes the probability mass of a constraint's language.

Backends (:class:`Backend`, one protocol): transformers causal LMs
(:class:`TransformersBackend`) and llama-cpp-python (:class:`LlamaCppBackend`, a
``llama_cpp.Llama`` made with ``logits_all=True``). torch, transformers and llama_cpp are
imported only when a backend over them is made; ``import tokamata`` imports none of this.

>>> from tokamata.generate import LogProbs
>>> LogProbs.of([[-0.5, -0.25]]).cumulative
[-0.75]
"""

from .backend import Backend
from .llama_cpp_backend import LlamaCppBackend
from .pipeline import Pipeline, constraint_matcher
from .results import GenerationResult, LogProbs, ProbabilityMass, SequenceLogProbs
from .transformers_backend import TransformersBackend

__all__ = ["Pipeline", "Backend", "TransformersBackend", "LlamaCppBackend", "GenerationResult", "LogProbs",
           "SequenceLogProbs", "ProbabilityMass", "constraint_matcher"]
