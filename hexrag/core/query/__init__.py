"""The query use case: keywords, the four context-building stages, merges, the answer."""
