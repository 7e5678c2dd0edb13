"""Claude Code hooks: turn the JSON events an agent emits into sessions, prompts and observations.

``payload`` parses stdin tolerantly, ``rules`` reads the ``[hooks]`` config, ``tools`` builds observations
from tool calls (pure, shared with transcript import), ``state`` remembers what was already recorded, and
``runner`` wires one event to ``Memory``. Nothing here imports typer: ``cmem hook`` bypasses the CLI layer.
"""
