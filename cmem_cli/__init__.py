"""cmem: durable local memory for AI coding agents."""

from cmem_cli.core.version import VERSION as __version__

__all__ = ["__version__"]
