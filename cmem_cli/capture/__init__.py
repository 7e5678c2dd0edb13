"""The capture front end: Claude Code hooks, transcript import, the Claude Code installer."""
