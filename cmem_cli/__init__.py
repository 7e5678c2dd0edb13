"""cmem: durable local memory for AI coding agents."""

from cmem_cli.core.version import VERSION as __version__

__all__ = ["__version__"]


def compile_if_missing() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set: when a loaded module of cmem has no current bytecode (two
    stats a module), a detached compile of cmem (:mod:`cmem_cli.core.bytecode`)."""
    import os
    import sys

    for name, module in list(sys.modules.items()):
        if not name.startswith(("cmem_cli", "cmem_index", "cmem_export")):
            continue
        source, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
        if not source or not cached:
            continue
        try:
            if os.stat(cached).st_mtime >= os.stat(source).st_mtime:
                continue
        except OSError:
            pass
        from cmem_cli.core.bytecode import compile_soon

        compile_soon()
        return
