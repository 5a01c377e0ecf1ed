"""The plain statement of every rule, as LightRAG states it (the oracle); the fast forms elsewhere
in the core are property-tested equal to these.
"""
