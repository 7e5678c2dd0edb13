"""Git replay of histories cmem was never tuned on: does `stale` follow the code a memory is about there too?

``../shared/tools/git_replay.py`` replays 200 commits of one repository as memories (each cites the Python files
its commit changed, anchored as of that commit), checks out the window's last commit and compares every
memory's ``stale`` with a label computed from git alone (fewer than half of the lines the commit added to a
cited file are still in it, or the file is gone). ``../shared/data/git-replay-dev`` is sqlite-utils, the
history the anchors were built against. These windows are other projects' histories, chosen after the rule
was written and run once on it, so they judge it the way held-out data does. Each window is named by its
repository and last commit; the tool selects the 200 newest non-merge first-parent commits up to it that
change a ``.py`` file (no more than 400 changed lines and 15 files) and computes the labels into a temporary
folder (nothing of the repositories is kept in this one).

    python -m bench.git_replay_heldout --window black --repo /path/to/black/.git [--limit 40] [--json OUT]

``--repo`` is any git dir holding the window's commits (a clone of the repository); ``cmem`` is this
checkout's console script (the one beside the running Python), or ``$CMEM``. docs/truth.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOL = Path(os.environ.get("CMEM_BENCH_TOOLS") or REPO.parent / "shared" / "tools") / "git_replay.py"

# name -> (repository, the window's last commit)
WINDOWS = {
    "black": ("github.com/psf/black", "8947c48ef2077c3a301b03c1e814dc2e3f78436e"),
    "httpx": ("github.com/encode/httpx", "ae1b9f66238f75ced3ced5e4485408435de10768"),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--window", choices=sorted(WINDOWS), required=True)
    parser.add_argument("--repo", required=True, help="a git dir holding the window's commits")
    parser.add_argument("--limit", type=int, default=0, help="replay about this many of the 200 memories")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    if not TOOL.exists():
        parser.error(f"no replay tool at {TOOL} (set CMEM_BENCH_TOOLS)")
    cmem = os.environ.get("CMEM") or shutil.which("cmem", path=str(Path(sys.executable).parent))
    if not cmem:
        parser.error("no cmem beside this Python: install this checkout, or set CMEM")
    url, end = WINDOWS[args.window]
    command = [sys.executable, str(TOOL), "--name", args.window, "--url", url, "--end", end]
    command += ["--limit", str(args.limit)] if args.limit else []
    command += ["--json", args.json] if args.json else []
    env = {**os.environ, "GIT_REPLAY_REPO": args.repo, "CMEM": cmem}
    raise SystemExit(subprocess.run(command, env=env, check=False).returncode)


if __name__ == "__main__":
    main()
