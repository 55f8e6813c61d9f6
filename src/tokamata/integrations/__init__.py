"""Adapters to frameworks; each imports its framework lazily (never from ``import tokamata``)."""
