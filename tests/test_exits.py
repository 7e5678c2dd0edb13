"""Exit codes belong to the CLI: the library's errors carry none, one table maps them, the man page lists it."""

from __future__ import annotations

import inspect

from cmem_cli.cli import exits
from cmem_cli.cli.clidocs import EXIT_CODES
from cmem_cli.core import errors

LIBRARY_ERRORS = [
    cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.CmemError)
]


def test_the_library_errors_carry_no_exit_code() -> None:
    for cls in LIBRARY_ERRORS:
        assert "exit_code" not in vars(cls), cls
        assert not hasattr(errors.NotFound("gone"), "exit_code")


def test_every_kind_of_library_error_has_its_documented_exit_code() -> None:
    expected = {
        "UsageError": 2, "NotFound": 3, "InvalidInput": 4, "InvalidRecord": 4, "DatabaseBusy": 5,
        "DatabaseCorrupt": 6, "StorageError": 7, "ModelError": 8, "SyncError": 9, "CmemError": 1,
    }  # fmt: skip
    sample = {
        cls.__name__: cls(0, "x") if cls is errors.InvalidRecord else cls("x") for cls in LIBRARY_ERRORS
    }
    assert {name: exits.exit_code(error) for name, error in sample.items()} == expected


def test_the_man_page_lists_every_code_the_table_gives() -> None:
    documented = {int(code) for code, _ in EXIT_CODES}
    assert (
        set(exits.EXIT_BY_ERROR.values()) | {exits.EXIT_OK, exits.EXIT_ERROR, exits.EXIT_NO_MATCH}
        == documented
    )
