"""Embedders named by spec in the stack-manifest tests (``tests.integration.stack_models:X``):
hashing models whose vectors differ from the default hashing model's (another salt)."""

from hexrag.adapters.memory import HashingEmbedder

#: 64-dimensional, model name ``salted-hashing``: not the default ``hexrag-hashing``.
SALTED = HashingEmbedder(64, model_name="salted-hashing")
#: Same dimension, another model name.
OTHER = HashingEmbedder(64, model_name="other-hashing")
