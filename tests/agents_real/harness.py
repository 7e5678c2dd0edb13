"""The real-client harness: each supported agent's own client (installed from npm by
``scripts/install_agents.sh``, pinned in ``clients.txt``) driven through two scripted sessions against
:mod:`tests.agents_real.model_server`, in a temporary repository and HOME where ``cmem install AGENT`` was
run. The tests then read what cmem stored.

A client that is not installed fails the run (CI installs them all); ``CMEM_AGENTS_PREFIX`` names the folder
(default ``~/.cache/cmem-agents``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from tests.agents_real import model_server as ms

CLIENTS = Path(__file__).with_name("clients.txt")
NOTE_TITLE = "Orders ship in batches of 42"
FIRST_PROMPT = "Make orders ship in batches of 42 and check the build"
SECOND_PROMPT = "What did we decide about batches?"
ANSWER = "Batches of 42 are in place; the build passes."
# A person's note on the file the first session changed, written between the sessions; the second session
# reads the file, and file recall gives this note (none of its words is the second prompt's, so prompt recall
# leaves it to the read; session 1's note is the prompt's, and a memory is given once a session).
FILE = "src/batches.py"
FILE_NOTE_TITLE = "Workers load the size once at start: restart them after changing it"


def prefix() -> Path:
    return Path(os.environ.get("CMEM_AGENTS_PREFIX") or Path.home() / ".cache" / "cmem-agents")


def pinned(package: str) -> str:
    """The version ``clients.txt`` pins for an npm package."""
    for line in CLIENTS.read_text().splitlines():
        name, _, version = line.strip().rpartition("@")
        if name == package:
            return version
    raise LookupError(package)


def client(program: str, package: str) -> Path:
    """The installed client; a missing or wrongly versioned one fails the test with what to run."""
    path = prefix() / "node_modules" / ".bin" / program
    want = pinned(package)
    manifest = prefix() / "node_modules" / package / "package.json"
    if not path.exists() or not manifest.exists():
        raise AssertionError(f"{program} is not installed in {prefix()}: run scripts/install_agents.sh")
    got = json.loads(manifest.read_text())["version"]
    assert got == want, f"{package} {got} installed, {want} pinned: run scripts/install_agents.sh"
    return path


def cmem_executable() -> str:
    """The cmem an installed agent runs: the script beside this Python, as `cmem install` picks it."""
    beside = Path(sys.executable).with_name("cmem")
    assert beside.is_file(), f"no cmem script beside {sys.executable}: pip install -e ."
    return str(beside)


@dataclass
class Session:
    prompt: str
    requests: list[ms.Recorded]
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Run:
    """One agent's two sessions and everything the tests check afterwards."""

    agent: str
    root: Path
    repo: Path
    env: dict[str, str]
    sessions: list[Session] = field(default_factory=list)
    install_out: str = ""
    before_install: dict[str, bytes | None] = field(default_factory=dict)
    after_uninstall: dict[str, bytes | None] = field(default_factory=dict)

    @property
    def cmem_home(self) -> Path:
        return Path(self.env["CMEM_HOME"])

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    def cmem(self, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args],
            cwd=self.repo,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check:
            assert proc.returncode == 0, f"cmem {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def rows(self, sql: str, params: tuple[Any, ...] = (), home: Path | None = None) -> list[tuple[Any, ...]]:
        conn = apsw.Connection(str((home or self.cmem_home) / "cmem.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()


def base_env(root: Path) -> dict[str, str]:
    """A private HOME, cmem home and XDG folders; none of the user's cmem settings; no proxy surprises."""
    # none of the user's cmem settings, nor the session of a Codex the tests may run in
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMEM_", "CODEX_"))}
    for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(
        HOME=str(root / "home"),
        CMEM_HOME=str(root / "cmem-home"),
        XDG_CONFIG_HOME=str(root / "home" / ".config"),
        XDG_CACHE_HOME=str(root / "home" / ".cache"),
        XDG_DATA_HOME=str(root / "home" / ".local" / "share"),
        XDG_STATE_HOME=str(root / "home" / ".local" / "state"),
        CMEM_EMBED_MODEL="none",
        CMEM_INDEX_BACKGROUND="off",
        NO_COLOR="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


def make_repo(root: Path) -> Path:
    repo = root / "orders-api"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "batches.py").write_text("BATCH_SIZE = 10\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return repo


def first_script(repo: Path, cmem: str) -> list[ms.Step]:
    """Session one: read, edit, a command that passes, one that fails, the agent's own note, the answer."""
    source = str(repo / "src" / "batches.py")
    return [
        ms.read(source),
        ms.edit(source, "BATCH_SIZE = 10", "BATCH_SIZE = 42"),
        ms.shell(
            "python3 -c 'import sys; sys.path.insert(0, \"src\"); import batches; print(batches.BATCH_SIZE)'"
        ),
        ms.shell("python3 -c 'raise SystemExit(3)'"),
        ms.shell(f"{cmem} add --type decision --title '{NOTE_TITLE}' --fact 'BATCH_SIZE is 42'"),
        ms.answer(ANSWER),
    ]


def second_script(repo: Path) -> list[ms.Step]:
    """Session two: read the file the first session changed (file recall's point), then answer."""
    return [ms.read(str(repo / FILE)), ms.answer("We decided on batches of 42.")]


def add_file_note(run: Run) -> None:
    """What a person notes about the file between the sessions (``cmem add`` in the repository)."""
    run.cmem("add", "--type", "decision", "--title", FILE_NOTE_TITLE, "--modified", FILE)


def plugin_package_installed(folder: Path, package: str, version: str) -> None:
    """An opencode-like client's config folder (opencode's, Kilo's) as the client leaves it once it has
    installed its plugin package there. With a plugin file in ``plugins/`` (cmem's) each start runs npm's
    installer in that folder for ``package`` at the client's own version, unless ``node_modules`` is there
    and ``package-lock.json`` lists what ``package.json`` does: a person pays that once, the harness would
    at every start (a registry round trip and, for opencode, 64 MB and about 12 s of CPU). cmem's plugin
    imports nothing from the package."""
    dependency = {package: version}
    (folder / "node_modules").mkdir()
    (folder / "package.json").write_text(json.dumps({"dependencies": dependency}, indent=2) + "\n")
    lock = {"lockfileVersion": 3, "requires": True, "packages": {"": {"dependencies": dependency}}}
    (folder / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n")


def snapshot(paths: list[Path]) -> dict[str, bytes | None]:
    return {str(p): (p.read_bytes() if p.exists() else None) for p in paths}


@dataclass(frozen=True)
class Client:
    """One agent's client as the harness drives it: ``configure`` writes the person's own config (the scripted
    provider) and returns the files ``cmem install`` touches, whose bytes must come back after
    ``--uninstall``; ``command`` is its command line for a prompt; ``env`` its variables."""

    agent: str
    program: str
    package: str
    configure: Callable[[Run, ms.ModelServer], list[Path]]
    command: Callable[[Path, str], list[str]]
    env: Callable[[Run, ms.ModelServer], dict[str, str]]

    def path(self) -> Path:
        return client(self.program, self.package)


def prepare(spec: Client, root: Path, server: ms.ModelServer) -> tuple[Run, list[Path]]:
    """A repository and a HOME with the person's agent config, cmem not installed yet."""
    repo = make_repo(root)
    run = Run(spec.agent, root, repo, {**base_env(root), "PWD": str(repo)})  # as a shell sets it
    watched = spec.configure(run, server)
    run.env.update(spec.env(run, server))
    return run, watched


def session(spec: Client, run: Run, server: ms.ModelServer, prompt: str, script: list[ms.Step]) -> Session:
    """One scripted session of the real client; its exit status must be 0."""
    server.play(script)
    began = time.monotonic()
    proc = subprocess.run(
        spec.command(spec.path(), prompt), cwd=run.repo, env=run.env, capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.monotonic() - began
    assert proc.returncode == 0, f"{spec.agent} exited {proc.returncode}: {proc.stderr[-2000:]}"
    return Session(prompt, list(server.requests), proc.stdout, proc.stderr, seconds)


def run_agent(spec: Client, root: Path, server: ms.ModelServer) -> Run:
    """Install cmem for the agent, run its two scripted sessions, uninstall; return what happened."""
    run, watched = prepare(spec, root, server)
    run.before_install = snapshot(watched)
    run.install_out = run.cmem("install", spec.agent)
    run.sessions.append(session(spec, run, server, FIRST_PROMPT, first_script(run.repo, cmem_executable())))
    wait_for_hooks(run)
    add_file_note(run)
    run.sessions.append(session(spec, run, server, SECOND_PROMPT, second_script(run.repo)))
    wait_for_hooks(run)
    run.cmem("install", spec.agent, "--uninstall")
    run.after_uninstall = snapshot(watched)
    return run


def module_run(spec: Client, tmp_path_factory: Any) -> Iterator[Run]:
    """The body of each agent module's ``run`` fixture: one client start serves every check."""
    spec.path()  # a client that is not installed fails here, before anything else
    server = ms.ModelServer().start()
    root = tmp_path_factory.mktemp(spec.agent)
    try:
        yield run_agent(spec, root, server)
    finally:
        server.stop()
        stop_left_over(root)


def _processes_of(variable: str, root: Path) -> list[tuple[int, bytes]]:
    """The processes (id, command line) whose ``variable`` names ``root`` or a folder in it: a run's
    private HOME or cmem home, which only the run's own processes have."""
    mark, inside = f"{variable}={root}".encode(), f"{variable}={root}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
            if any(v == mark or v.startswith(inside) for v in variables):
                found.append((int(entry.name), (entry / "cmdline").read_bytes()))
        except OSError:  # gone meanwhile
            continue
    return found


def stop_left_over(root: Path, seconds: float = 5) -> list[int]:
    """Stop what a client left running after it exited (Cline's hub daemon): the processes whose HOME is in
    ``root`` (a run's folder, or its HOME). Returns their ids."""
    import signal

    found = [pid for pid, _ in _processes_of("HOME", root)]
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in found):
        time.sleep(0.1)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found


def wait_for_hooks(run: Run, seconds: float = 10) -> None:
    """Hooks an agent starts without waiting (opencode's plugin, Claude Code's async hooks) and the children
    that record a hook's event after it answered finish shortly after the client exits: wait until no cmem
    hook of this run is running and its spool holds no event (``capture/hooks/spool.py``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (hooks_running(run) or spooled(run)):
        time.sleep(0.05)


def hooks_running(run: Run) -> list[int]:
    """The run's cmem hook processes (a hook, the child replaying its event), by their cmem home."""
    return [pid for pid, argv in _processes_of("CMEM_HOME", run.cmem_home) if b"hook" in argv.split(b"\0")]


def spooled(run: Run) -> list[str]:
    """Events in the run's spool: written by a hook, not yet recorded (or being recorded)."""
    try:
        return os.listdir(run.cmem_home / "spool")
    except FileNotFoundError:
        return []


def which(program: str) -> str:
    found = shutil.which(program)
    assert found, f"{program} not found"
    return found
