"""The ingestion use case: chunking, extraction, merging, summaries, LightRAG's document-side
stores and deletion.
"""
