"""`cmem view`'s page in a real browser: headless Chromium (Debian's package) renders what the real CLI wrote,
and the tests read the DOM after the page's script ran, press keys and click as a person would.

One Chromium serves the whole run (the tests share one xdist worker: ``SHARED_WORKER`` in conftest.py).
When chromium is missing it is installed with apt (as root); where that cannot be done the tests fail and
say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chromium import Browser, ChromiumMissing, Page, find_chromium
from tests.png import pixels, rgb_at
from tests.view_fixtures import HOSTILE_NARRATIVE, HOSTILE_TITLE, PROJECT, fill_home

pytestmark = pytest.mark.browser
ALL_ROWS = {"P1", "1", "2", "3", "4", "5", "S1"}


@pytest.fixture(scope="module")  # every browser test is in this module: Chromium exits when they are done
def browser() -> Iterator[Browser]:
    try:
        executable = find_chromium()
    except ChromiumMissing as exc:
        pytest.fail(f"the browser tests need chromium: {exc}", pytrace=False)
    with Browser(executable) as running:
        yield running


def private_env(root: Path) -> dict[str, str]:
    return {
        "CMEM_HOME": str(root / "cmem-home"), "HOME": str(root / "user"), "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_CACHE_HOME": str(root / "cache"), "CMEM_EMBED_MODEL": "none", "CMEM_PROJECT": PROJECT,
    }  # fmt: skip


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The page the real `cmem view` writes for the fixture home (view_fixtures), and the records' ids."""
    root = tmp_path_factory.mktemp("view")
    env = private_env(root)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        ids = fill_home(Path(env["CMEM_HOME"]))
    result = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "view", "--no-open"],
        capture_output=True, text=True, env={**os.environ, **env}, cwd=root, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip()), ids


@pytest.fixture
def page(browser: Browser, page_file: tuple[Path, dict]) -> Iterator[Page]:
    tab = browser.new_page(width=1280, height=800)
    tab.goto(page_file[0].as_uri())
    yield tab
    tab.close()


def visible_ids(page: Page) -> list[str]:
    return page.evaluate(
        "[...document.querySelectorAll('#timeline .row')].filter(r => !r.hidden && !r.closest('[hidden]'))"
        ".map(r => r.dataset.id)"
    )


def current_id(page: Page) -> str | None:
    return page.evaluate("document.querySelector('.row.current')?.dataset.id ?? null")


def details_text(page: Page) -> str | None:
    return page.evaluate(
        "document.getElementById('details').hidden ? null : document.getElementById('details').innerText"
    )


def test_the_page_draws_every_record_with_no_error_and_no_request(page, page_file):
    path, _ = page_file
    assert page.evaluate("document.body.dataset.ready") == "true"  # its script ran, under its own CSP
    assert set(visible_ids(page)) == ALL_ROWS
    days = page.evaluate("[...document.querySelectorAll('section.day')].map(d => d.dataset.day)")
    assert len(days) == 2 and days == sorted(days, reverse=True)  # newest day first
    heads = page.evaluate("[...document.querySelectorAll('.session .label')].map(e => e.textContent)")
    assert heads == ["Job queue locking", "Outside a session", "Fix early logouts"]
    # inside a session, in the order it happened: the prompt, the work, the summary
    login = page.evaluate(
        "[...[...document.querySelectorAll('.session')].find(s => s.textContent.includes('Fix early logouts'))"
        ".querySelectorAll('.row')].map(r => r.dataset.id)"
    )
    assert login == ["P1", "1", "2", "S1"]
    assert page.evaluate("document.querySelector('.row[data-id=\"4\"] .icon').textContent") == "\N{COMPASS}"
    # the chart: one stacked bar per day and type shown (day 1: decision, insight; day 2: five types)
    assert page.evaluate("document.querySelectorAll('#chart rect.bar').length") == 7
    assert page.errors() == []
    assert page.requests() == [path.as_uri()]

    width, height, channels, rows = pixels(page.screenshot(scale=0.25))
    background = rgb_at(rows, channels, width - 1, height - 1)
    inked = sum(1 for y in range(height) for x in range(width) if rgb_at(rows, channels, x, y) != background)
    colours = {rgb_at(rows, channels, x, y) for y in range(0, height, 2) for x in range(0, width, 2)}
    assert inked > 0.08 * width * height, "the screenshot is mostly empty"
    assert len(colours) > 50  # text, bars, type colours: not a blank or single-colour page


def test_filters_hide_and_show_rows_without_reloading(page):
    page.evaluate("window.sameDocument = true")
    page.click('#types .chip[data-type="decision"]')
    assert set(visible_ids(page)) == ALL_ROWS - {"4"}
    assert page.evaluate("document.getElementById('shown').textContent") == "6 of 7 records"
    assert page.evaluate("document.querySelectorAll('#chart rect.bar').length") == 6
    page.evaluate("document.querySelector('#types .chip[data-type=\"decision\"]').focus()")
    page.press("Enter")  # a toggle works from the keyboard too
    assert set(visible_ids(page)) == ALL_ROWS

    page.evaluate(
        "(() => { const s = document.getElementById('f-agent'); s.value = 'codex';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert visible_ids(page) == ["4", "5"]
    assert page.evaluate("document.querySelector('section.day:not([hidden])') !== null")
    hidden_days = page.evaluate("[...document.querySelectorAll('section.day')].map(d => d.hidden)")
    assert hidden_days == [False, True]  # the other day has nothing by codex
    page.evaluate(
        "(() => { const s = document.getElementById('f-agent'); s.value = '';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    page.press("/")
    page.type("jwt")
    assert visible_ids(page) == ["2"]
    page.type(" cookie")  # every word must match
    assert visible_ids(page) == []
    assert page.evaluate("document.getElementById('empty').hidden") is False
    assert page.evaluate("window.sameDocument") is True
    assert page.errors() == []


def test_the_project_filter_of_a_page_of_every_project(browser, page_file, tmp_path):
    path, ids = page_file
    root = path.parent.parent.parent
    out = tmp_path / "all.html"
    done = subprocess.run(
        [sys.executable, "-m", "cmem_cli", "view", "--all-projects", "--no-open", "-o", str(out)],
        capture_output=True, text=True, env={**os.environ, **private_env(root)}, cwd=root, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tab = browser.new_page()
    tab.goto(out.as_uri())
    options = tab.evaluate("[...document.querySelectorAll('#f-project option')].map(o => o.value)")
    assert options == ["", "billing", PROJECT]
    tab.evaluate(
        "(() => { const s = document.getElementById('f-project'); s.value = 'billing';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert visible_ids(tab) == [str(ids["elsewhere"])]
    assert tab.errors() == []
    tab.close()


def test_the_keyboard_moves_through_rows_and_opens_the_full_record(page, page_file):
    _, ids = page_file
    page.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.press("Escape")
    assert page.evaluate("document.activeElement.id") != "q"
    order = visible_ids(page)
    page.press("ArrowDown")
    assert current_id(page) == order[0]
    for _ in range(order.index("2")):
        page.press("ArrowDown")
    page.press("ArrowUp")
    page.press("ArrowDown")
    assert current_id(page) == "2"
    assert page.evaluate("document.activeElement.dataset.id") == "2"
    page.press("Enter")
    assert page.evaluate("location.hash") == "#2"  # a reload or bookmark opens it again
    text = details_text(page)
    assert text is not None
    for expected in (
        "JWT expiry compared seconds to milliseconds", "exp is in seconds", "auth, jwt", "src/auth/jwt.ts",
        "Edit", "related #1 Cookie max-age was set in seconds twice",
        "led to #6 Ancient decision outside the window (not in this window)",
        "caused by #4 Use Postgres advisory locks for the job queue", "cmem://observation/", "/export/webapp/",
    ):  # fmt: skip
        assert expected in text, expected
    page.click("#details button.jump")  # the first link: to #1, listed both ways
    assert current_id(page) == "1"
    assert "Cookie max-age was set in seconds twice" in details_text(page)
    assert "related #2 JWT expiry" in details_text(page)
    page.press("ArrowDown")  # with the panel open, moving shows the next record
    assert "JWT expiry" in details_text(page)
    page.press("Escape")
    assert details_text(page) is None
    assert page.evaluate("document.activeElement.dataset.id") == "2"

    page.click('.row[data-id="S1"]')
    assert "add a regression test for the cookie" in details_text(page)
    page.click('.row[data-id="P1"]')
    assert "why do users get logged out after an hour?" in details_text(page)
    assert page.errors() == []


def test_hostile_memory_text_shows_as_text_and_never_runs(page, page_file):
    path, ids = page_file
    hostile = str(ids["hostile"])
    assert (
        page.evaluate(f"document.querySelector('.row[data-id=\"{hostile}\"] .title').textContent")
        == HOSTILE_TITLE
    )
    page.click(f'.row[data-id="{hostile}"]')
    assert page.evaluate("document.querySelector('#details .text').textContent") == HOSTILE_NARRATIVE
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img, iframe, a, b, script:not([id])').length") == 1
    assert page.evaluate("document.querySelectorAll('script').length") == 2
    assert page.evaluate("document.querySelectorAll('svg').length") == 1  # the chart's, none from a memory
    assert page.errors() == []
    assert page.requests() == [path.as_uri()]
    # and were a script to run, the page's policy would stop it from sending anything
    assert page.evaluate("fetch('http://127.0.0.1:9/').then(() => 'sent', () => 'blocked')") == "blocked"
    assert any("Content Security Policy" in error for error in page.errors())


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)


def test_stale_and_other_branch_markers_come_from_the_real_fields(browser, tmp_path):
    """Records anchored in a real git work tree: one whose cited file was edited since (stale), one made on a
    branch that main has not merged, one whose file is unchanged (no marker)."""
    repo = tmp_path / "app"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "src" / "auth.py").write_text("def login():\n    return True\n")
    (repo / "src" / "db.py").write_text("POOL = 4\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    env = {**os.environ, **private_env(tmp_path), "CMEM_PROJECT": "app"}

    def cmem(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args], cwd=repo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    stale = cmem("add", "Login checks expiry", "--type", "bugfix", "--modified", "src/auth.py")
    fresh = cmem("add", "Pool size is 4", "--type", "discovery", "--read", "src/db.py")
    git(repo, "checkout", "-q", "-b", "feature/locks")
    (repo / "src" / "locks.py").write_text("LOCKS = 'advisory'\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "locks")
    other = cmem("add", "Use advisory locks", "--type", "decision")
    git(repo, "checkout", "-q", "main")
    (repo / "src" / "auth.py").write_text("def sign_in():\n    return check_expiry()\n")  # its lines go
    path = Path(cmem("view", "--no-open"))

    tab = browser.new_page()
    tab.goto(path.as_uri())
    tags = tab.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.row')].map(r => [r.dataset.id,"
        " [...r.querySelectorAll('.tag.stale, .tag.superseded, .tag.branch')].map(t => t.textContent)]))"
    )
    assert tags == {stale: ["stale"], fresh: [], other: ["\u2387 feature/locks"]}
    options = tab.evaluate("[...document.querySelectorAll('#f-marker option')].map(o => o.value)")
    assert options == ["", "stale", "branch"]
    tab.evaluate(
        "(() => { const s = document.getElementById('f-marker'); s.value = 'stale';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    assert visible_ids(tab) == [stale]
    tab.click(f'.row[data-id="{stale}"]')
    files = tab.evaluate(
        "[...document.querySelectorAll('#details h3')].find(h => h.textContent.startsWith('Stale'))"
        ".nextElementSibling.textContent"
    )
    assert files == "src/auth.py"
    tab.evaluate(
        "(() => { const s = document.getElementById('f-marker'); s.value = '';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    tab.click(f'.row[data-id="{other}"]')
    assert "Recorded on feature/locks, whose work main has not merged." in details_text(tab)
    assert tab.errors() == []
    tab.close()


def test_a_replaced_record_is_struck_through_and_names_its_successor(browser, tmp_path):
    """``superseded_by`` from a real `cmem link NEW supersedes OLD`; the other rows carry it as null. Then
    ``possibly_superseded_by``, inferred on a page made with a query, as a "maybe replaced" tag."""
    env = {**os.environ, **private_env(tmp_path)}

    def cmem(*args: str, input: str | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            input=input,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    old = cmem("add", "Deploys go through staging", "--type", "decision")
    new = cmem("add", "Deploys go straight to production behind a flag", "--type", "decision")
    kept = cmem("add", "Staging keeps nightly data", "--type", "discovery")
    cmem("link", new, "supersedes", old)
    tab = browser.new_page()
    tab.goto(Path(cmem("view", "--no-open")).as_uri())
    assert tab.evaluate("[...document.querySelectorAll('.row.is-superseded')].map(r => r.dataset.id)") == [
        old
    ]
    assert tab.evaluate("document.querySelector('.row.is-superseded .tag.superseded').textContent") == (
        f"replaced by #{new}"
    )
    assert tab.evaluate(f"document.querySelector('.row[data-id=\"{kept}\"] .tag.superseded')") is None
    tab.click(f'.row[data-id="{old}"]')
    text = details_text(tab)
    assert f"replaced by #{new} Deploys go straight to production behind a flag" in text
    tab.click("#details button.jump")  # to the successor
    assert current_id(tab) == new
    assert tab.errors() == []
    tab.close()
    # inferred, not linked: a page made with a query marks what search would ("maybe replaced")
    records = [
        {"title": t, "created_at": f"{day}T09:00:00Z"}
        for t, day in (
            ("Max upload size is 10 MB for attachments", "2026-01-05"),
            ("Max upload size is now 25 MB", "2026-01-09"),
        )
    ]
    older, newer = cmem("add", "--json", "-", input=json.dumps(records)).split()
    tab = browser.new_page()
    tab.goto(Path(cmem("view", "max upload size", "--since", "2026-01-01", "--no-open")).as_uri())
    assert tab.evaluate("[...document.querySelectorAll('.tag.possibly')].map(t => t.textContent)") == [
        f"maybe replaced by #{newer}"
    ]
    tab.click(f'.row[data-id="{older}"]')
    assert f"maybe replaced by #{newer} Max upload size is now 25 MB" in details_text(tab)
    assert tab.errors() == []
    tab.close()


def luminance(css_colour: str) -> float:
    red, green, blue = (int(part) for part in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.mark.parametrize(("width", "dark"), [(1280, True), (390, False), (390, True)])
def test_readable_in_light_and_dark_at_desktop_and_phone_widths(browser, page_file, width, dark):
    tab = browser.new_page(width=width, height=844 if width < 500 else 800, mobile=width < 500, dark=dark)
    tab.goto(page_file[0].as_uri() + "#4")  # an address naming a record opens it
    assert "Use Postgres advisory locks" in details_text(tab)
    tab.press("Escape")
    body, text = tab.evaluate(
        "[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]"
    )
    assert (luminance(body) < 0.2) if dark else (luminance(body) > 0.9)
    assert abs(luminance(body) - luminance(text)) > 0.6  # text stands out of its background
    assert tab.evaluate("document.documentElement.scrollWidth") <= width  # nothing runs off the side
    assert set(visible_ids(tab)) == ALL_ROWS
    tab.click('.row[data-id="2"]')
    panel = tab.evaluate(
        "(() => { const r = document.getElementById('details').getBoundingClientRect();"
        " return [r.left, r.width]; })()"
    )
    if width < 500:
        assert panel == [0, width]  # the record covers the phone's screen
    else:
        assert 0 < panel[1] < width / 2  # beside the timeline
    tab.press("Escape")
    assert details_text(tab) is None
    assert tab.errors() == []
    tab.close()


def test_an_invalidated_memory_is_marked_and_the_control_hands_over_the_command(browser, tmp_path):
    """The page makes no request: its curation control shows (and copies) the one command that invalidates
    a memory, with the reason typed, or restores an invalidated one."""
    env = {**os.environ, **private_env(tmp_path), "CMEM_PROJECT": "app"}

    def cmem(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "cmem_cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    kept = cmem("add", "Bcrypt cost is 12", "--type", "decision")
    gone = cmem("add", "Bcrypt cost is 10", "--type", "decision")
    cmem("invalidate", gone, "--reason", "raised to 12")
    tab = browser.new_page()
    tab.goto(Path(cmem("view", "--no-open")).as_uri())
    tags = tab.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.row')].map(r => [r.dataset.id,"
        " [...r.querySelectorAll('.tag.invalidated')].map(t => t.title)]))"
    )
    assert tags[kept] == [] and tags[gone] == [
        "No longer holds: raised to 12 (left out of search, context and the briefing)"
    ]
    tab.click(f'.row[data-id="{gone}"]')
    assert tab.evaluate("document.querySelector('#details .curation .command').textContent") == (
        f"cmem restore {gone}"
    )
    tab.click(f'.row[data-id="{kept}"]')
    tab.evaluate(
        "(() => { const r = document.querySelector('#details .curation .reason'); r.value = \"it's wrong\";"
        " r.dispatchEvent(new Event('input')); })()"
    )
    command = tab.evaluate("document.querySelector('#details .curation .command').textContent")
    assert command == f"cmem invalidate {kept} --reason 'it'\\''s wrong'"
    assert tab.errors() == []
    tab.close()
