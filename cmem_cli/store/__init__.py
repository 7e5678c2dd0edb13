"""The record model and the repository: rows in, rows out. Imports only the kernel."""
