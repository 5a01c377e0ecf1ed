"""Document status rows and extracted fragments: re-exported from :mod:`hexrag.domain.documents`.

The same objects, handed on so that code written before keeps importing them from here.
"""

from __future__ import annotations

from hexrag.domain.documents import (
    DOC_STATUSES,
    DocRecord,
    Fragment,
    FragmentKind,
    content_summary,
    encode_file_path,
    merge_metadata_fields,
    metadata_fields,
)

__all__ = [
    "DOC_STATUSES",
    "DocRecord",
    "Fragment",
    "FragmentKind",
    "content_summary",
    "encode_file_path",
    "merge_metadata_fields",
    "metadata_fields",
]
