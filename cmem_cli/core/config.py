"""Where cmem keeps its data and what the user configured.

Resolution order for the home directory: ``--home`` > ``CMEM_HOME`` > ``$XDG_DATA_HOME/cmem`` >
``~/.local/share/cmem``. The optional config file lives at ``$CMEM_CONFIG`` or
``$XDG_CONFIG_HOME/cmem/config.toml`` (default ``~/.config/cmem/config.toml``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmem_cli.core.errors import InvalidInput, StorageError

if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_EMBED_MODEL = "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf"
DEFAULT_RERANK_MODEL = "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf"

DIR_MODE = 0o700
FILE_MODE = 0o600

# An imported transcript untouched this many seconds is finished: its last turn is closed (`cmem import
# --settle`'s default; capture's turn reader takes it too). Here so that the CLI need not load capture.
DEFAULT_SETTLE_SECONDS = 300.0


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def config_file_path() -> Path:
    explicit = os.environ.get("CMEM_CONFIG")
    if explicit:
        return Path(explicit)
    return _xdg("XDG_CONFIG_HOME", ".config") / "cmem" / "config.toml"


def load_config_file(path: Path | None = None) -> dict[str, Any]:
    """Read the TOML config; a missing file is an empty config, a broken one an error."""
    path = path or config_file_path()
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StorageError(f"cannot read config file {path}: {exc.strerror}") from None
    import tomllib  # only when there is a file: about 3 ms of every hook call otherwise

    with fh:
        try:
            return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"config file {path} is not valid TOML: {exc}") from None
        except OSError as exc:
            raise StorageError(f"cannot read config file {path}: {exc.strerror}") from None


def resolve_home(cli_home: str | os.PathLike[str] | None = None) -> Path:
    if cli_home:
        return Path(cli_home).expanduser()
    env = os.environ.get("CMEM_HOME")
    if env:
        return Path(env).expanduser()
    return _xdg("XDG_DATA_HOME", ".local/share") / "cmem"


class Config:
    """Resolved settings for one cmem invocation. (A plain class: importing dataclasses costs every hook
    call about 5 ms.)"""

    def __init__(
        self,
        home: Path,
        export_dir: Path,
        embed_model: str | None = DEFAULT_EMBED_MODEL,
        rerank_model: str | None = None,
        raw: dict[str, Any] | None = None,
        embed_model_chosen: bool = False,
        machine: str | None = None,
        author: str | None = None,
    ):
        self.home = home
        self.export_dir = export_dir
        self.embed_model = embed_model
        self.rerank_model = rerank_model
        self.raw = raw if raw is not None else {}
        # A model someone named (environment or config file) must exist; the built-in default may be absent.
        self.embed_model_chosen = embed_model_chosen
        # who this home writes as, when the config file says (CMEM_MACHINE and CMEM_AUTHOR come first)
        self.machine, self.author = machine, author

    @property
    def db_path(self) -> Path:
        return self.home / "cmem.db"

    @property
    def index_path(self) -> Path:
        return self.home / "index.db"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def models_dir(self) -> Path:
        env = os.environ.get("CMEM_MODELS_DIR")
        if env:
            return Path(env).expanduser()
        return _xdg("XDG_CACHE_HOME", ".cache") / "cmem" / "models"

    @property
    def own_cache_dir(self) -> Path | None:
        """cmem's own cache folder (``~/.cache/cmem``), kept private; None when ``CMEM_MODELS_DIR`` points
        the models elsewhere, a folder that may be shared on purpose and is not cmem's to tighten."""
        if os.environ.get("CMEM_MODELS_DIR"):
            return None
        return self.models_dir.parent

    def section(self, name: str) -> dict[str, Any]:
        value = self.raw.get(name, {})
        return value if isinstance(value, dict) else {}

    def ensure_home(self) -> None:
        """Create home and export directories (0700); a clear error if that is impossible."""
        for directory in (self.home, self.export_dir):
            try:
                if not directory.is_dir():
                    # The folders above home are the user's (default mode); home and below are cmem's (0700).
                    inside = directory == self.home or self.home in directory.parents
                    top = self.home if inside else directory
                    top.parent.mkdir(parents=True, exist_ok=True)
                    make_private_dirs(directory)
            except OSError as exc:
                raise StorageError(f"cannot create {directory}: {exc.strerror}") from None
            if not os.access(directory, os.W_OK | os.X_OK):
                raise StorageError(f"{directory} is not writable")


def make_private_dirs(directory: Path, check: Callable[[Path], None] | None = None) -> bool:
    """Create ``directory`` and each missing folder above it, every one 0700; existing folders keep their mode.
    Returns whether any folder was made.

    ``Path.mkdir(parents=True, mode=...)`` gives the mode to the last folder only: the ones above it get
    the umask's 0755, and a model cache or an export folder would be readable by every user. (The XDG base
    directory spec asks the same of a base folder a program has to create.) ``check``, if given, sees the
    deepest path that already exists before anything is made (the export refuses a symlinked folder there).
    """
    missing: list[Path] = []
    folder = directory
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    if check is not None:
        check(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by a concurrent writer meanwhile
            os.mkdir(folder, DIR_MODE)
    return bool(missing)


def _config_name(raw: Mapping[str, Any], key: str) -> str | None:
    """A name the config file gives (``machine``, ``author``): a non-empty line of text, or None."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInput(
            f"config file {config_file_path()}: '{key}' must be a name (a non-empty line of text)"
        )
    return value.strip()


def _config_path(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value or "\x00" in value):
        raise InvalidInput(f"config file {config_file_path()}: '{key}' must be a path (a non-empty string)")
    return value


def env_int(name: str, default: int, low: int, high: int) -> int:
    """An integer setting from the environment; a bad value is a one-line usage error, not a crash."""
    from cmem_cli.core.errors import UsageError

    text = os.environ.get(name)
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name} must be an integer, got {text!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {value}")
    return value


def load_config(cli_home: str | os.PathLike[str] | None = None) -> Config:
    raw = load_config_file()
    for key in ("home", "export_dir"):
        _config_path(raw, key)
    home = resolve_home(cli_home or raw.get("home"))
    export_setting = raw.get("export_dir")
    export_dir = home / "export"
    if export_setting:  # a relative setting is relative to home (home itself may be relative: once only)
        setting = Path(export_setting).expanduser()
        export_dir = setting if setting.is_absolute() else home / setting
    models = raw.get("models", {}) if isinstance(raw.get("models"), dict) else {}
    embed = os.environ.get("CMEM_EMBED_MODEL") or models.get("embed") or DEFAULT_EMBED_MODEL
    rerank = os.environ.get("CMEM_RERANK_MODEL") or models.get("rerank") or None
    return Config(
        home=home,
        export_dir=export_dir,
        embed_model=embed if embed != "none" else None,
        rerank_model=rerank if rerank != "none" else None,
        raw=raw,
        embed_model_chosen=embed != DEFAULT_EMBED_MODEL and embed != "none",
        machine=_config_name(raw, "machine"),
        author=_config_name(raw, "author"),
    )


def default_project(cwd: str | os.PathLike[str] | None = None) -> str:
    """``CMEM_PROJECT`` > the enclosing git repository's short name > directory name > ``default``.

    What a front end can say before it opens the store (a hook checks ``exclude_projects`` with it); the
    store may know the repository under another name (two repositories called alike), which
    :meth:`cmem_cli.api.Memory.project_here` returns."""
    return named_project(cwd) or "default"


def named_project(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``CMEM_PROJECT`` > the enclosing git repository's short name > directory name; None in `/`, where
    nothing names one (a desktop MCP client starts its servers there)."""
    return os.environ.get("CMEM_PROJECT") or _directory_name(Path(cwd) if cwd else Path.cwd())


def _directory_name(directory: Path) -> str | None:
    from cmem_cli.core.repo_identity import repository_identity

    directory = directory.expanduser()
    identity = repository_identity(directory.resolve() if directory.exists() else directory)
    return identity.name if identity is not None else directory.name or None


# Codex (0.16x on) gives its shell commands the session's id: a note the agent records with `cmem add`
# joins the session its hooks record without an env file (Codex has none).
CODEX_SESSION = "CODEX_SESSION_ID"


def default_agent() -> str:
    if os.environ.get("CMEM_AGENT"):
        return os.environ["CMEM_AGENT"]
    if os.environ.get(CODEX_SESSION):
        return "codex"
    handed = _process_session()
    return handed[1] if handed else "cli"


def default_session() -> str | None:
    if os.environ.get("CMEM_SESSION") or os.environ.get(CODEX_SESSION):
        return os.environ.get("CMEM_SESSION") or os.environ.get(CODEX_SESSION)
    handed = _process_session()
    return handed[0] if handed else None


def _process_session() -> tuple[str, str] | None:
    """The session an agent with no env file handed to the shell this command runs in
    (:mod:`cmem_cli.core.process_session`; a few reads of /proc, not cached: an MCP server lives long)."""
    from cmem_cli.core.process_session import find

    return find(resolve_home())


__all__ = [
    "Config",
    "DEFAULT_EMBED_MODEL",
    "DEFAULT_RERANK_MODEL",
    "DIR_MODE",
    "FILE_MODE",
    "default_agent",
    "default_project",
    "named_project",
    "default_session",
    "load_config",
    "make_private_dirs",
    "resolve_home",
]
