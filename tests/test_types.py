"""The code type-checks strictly where it must: mypy, as configured in pyproject.toml ([tool.mypy]).

mypy itself is the lint step (`scripts/lint`, which .ci/run runs before the suite), not a test: as a test
it took 78 s of every run on a loaded machine and repeated what the lint step had just said. Strict for
every layer under the front ends (the kernel, the store, the index, the export, the services, the team
remote, git sync, the API) and the front ends' seams; the defaults plus every function body elsewhere.
Run it by hand with `mypy` from the repository root (the first run takes half a minute; later ones reuse
.mypy_cache and take seconds)."""

from __future__ import annotations

from tests.conftest import REPO

STRICT = ("cmem_cli.core.*", "cmem_cli.store.*", "cmem_index.*", "cmem_export.*", "cmem_cli.services.*",
          "cmem_cli.team.*", "cmem_cli.sync.*", "cmem_cli.api.*")  # fmt: skip


def test_every_layer_under_the_front_ends_is_checked_strictly() -> None:
    """A package dropped from the strict list would let untyped code back in unnoticed: the list names them."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [strict] = [o for o in config["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs")]
    assert set(STRICT) <= set(strict["module"])
    assert strict["warn_return_any"] and strict["no_implicit_reexport"] and strict["disallow_any_generics"]
