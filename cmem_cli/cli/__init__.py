"""The command-line front end: option table, parsers, typer app, rendering, thin commands."""
