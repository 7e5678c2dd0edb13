"""The record model, the repository and every SQL statement against ``cmem.db``. Imports only the kernel."""
