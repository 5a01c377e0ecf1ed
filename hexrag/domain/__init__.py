"""The domain: the values every layer speaks, imported by ports, core and adapters alike.

It imports nothing else of hexrag (no port, no core, no adapter, no configuration, no
tokenizer), so ``import hexrag.domain`` is cheap and every other layer can stand on it.

* :mod:`hexrag.domain.records` - graph nodes and edges, chunks, vector rows and hits;
* :mod:`hexrag.domain.scope` - :class:`QueryScope`, the part of the corpus a query may see;
* :mod:`hexrag.domain.params` - :class:`QueryParam` and :class:`EngineSettings`;
* :mod:`hexrag.domain.documents` - document status rows and extracted fragments;
* :mod:`hexrag.domain.errors` - hexrag's error tree.
"""
