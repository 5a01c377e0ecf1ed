"""Moving a knowledge base between stacks: export, import, migrate, check.

Everything here talks to stores through the ports and their scan capabilities
(:mod:`hexrag.ports.scan`), so it works for every backend and every pair of backends:

* :mod:`~hexrag.transfer.archive`: the backend-neutral archive (JSON lines + ``.npy`` +
  manifest), :func:`export_stack` and :func:`import_archive`;
* :mod:`~hexrag.transfer.check`: :func:`check_stack`, the consistency report;
* :mod:`~hexrag.transfer.codec`: the JSON form of each record type;
* :mod:`~hexrag.transfer.sections`: the declared list of a stack's sections (every transfer
  and digest goes through it);
* :mod:`~hexrag.transfer.migrate`: :func:`~hexrag.transfer.migrate.migrate_stack` and
  :func:`~hexrag.transfer.migrate.verify_migration`;
* :mod:`~hexrag.transfer.digests`: per-section counts and content checksums;
* :mod:`~hexrag.transfer.compare`: golden searches compared tie-aware.
"""

from __future__ import annotations

from hexrag.transfer.archive import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    ArchiveError,
    StackStores,
    export_stack,
    import_archive,
    read_manifest,
    verify_archive,
)
from hexrag.transfer.check import CheckReport, check_stack

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "ArchiveError",
    "CheckReport",
    "StackStores",
    "check_stack",
    "export_stack",
    "import_archive",
    "read_manifest",
    "verify_archive",
]
