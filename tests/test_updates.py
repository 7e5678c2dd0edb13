"""Inferred supersession through the CLI: a newer memory that states an update of the same subject ranks first
and the older one carries `possibly_superseded_by`; related memories that are both true are never marked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cmem_cli.services.truth.updates import clauses, updates


def load(cli: Any, project: str, *titles: str) -> list[int]:
    """Observations of ``project``, one day apart in the order given (the last is the newest)."""
    records = [
        {"title": title, "project": project, "created_at": f"2026-03-{10 + day:02d}T09:00:00Z"}
        for day, title in enumerate(titles)
    ]
    result = cli("add", "--json", "-", input=json.dumps(records))
    assert result.exit_code == 0, result.stderr
    return [int(i) for i in result.stdout.split()]


def search(cli: Any, query: str, project: str) -> list[dict[str, Any]]:
    result = cli("search", query, "--project", project, "--mode", "keyword", "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


# Each: an older memory, a newer one that updates it, and a question about the subject.
UPDATES = [
    ("Dashboard API p95 response time is 400ms under load",
     "Dashboard API response time has improved to 250ms after adding caching",
     "what is the dashboard API response time"),
    ("Deploy freeze starts on April 1 for the release",
     "The deploy freeze was moved to April 5",
     "when does the deploy freeze start"),
    ("Max upload size is 10 MB for attachments",
     "Max upload size is now 25 MB",
     "max upload size"),
    ("We merged 150 commits into the main branch for v1.0",
     "Commits merged into the main branch have now reached 165",
     "how many commits are merged into main"),
    # the new value is not the first one after the word of change: the date stays, the time moves
    ("Design review with Dana on March 22 at 3 PM to go over the schema",
     "The design review with Dana was rescheduled to March 22 at 4:30 PM",
     "what time is the design review with Dana"),
    # "it" stands for the subject the sentence named before the word of change
    ("The staging deploy of the billing service takes 9 minutes",
     "Looked at the staging deploy of the billing service again, and it was shortened to 6 minutes",
     "how long does the staging deploy of the billing service take"),
    # a range of a duration, and a word of change whose subject follows its value
    ("Backups of the orders database are kept for 6-9 months",
     "Retention for backups of the orders database was shortened to 5-7 months",
     "how long are backups of the orders database kept"),
    ("We have to ship the mobile release by the April 20 deadline",
     "Agreed on the new April 25 deadline for the mobile release",
     "mobile release deadline"),
    # a number after a name is a version of it, not a count of the word after it ("15 last weekend")
    ("The production server runs PostgreSQL 13 with one replica",
     "Upgraded the production server to PostgreSQL 15 last weekend",
     "which PostgreSQL version does production run"),
    # "down to", "shrank to": words of change only with "to" before the value
    ("The CI pipeline takes 14 minutes end to end",
     "After caching dependencies the CI pipeline is down to 6 minutes",
     "how long does the CI pipeline take"),
    # one word says what both values are of ("image"), where the rest of the sentences differ
    ("Our Docker image is 1.2 GB and slow to pull",
     "With a slim base the image shrank to 340 MB",
     "how big is the Docker image"),
    # a day of the week is a date
    ("The sprint demo is on Thursday at 3 PM",
     "The sprint demo moved to Friday at 11 AM",
     "when is the sprint demo"),
    # a word of addition after the value that qualifies another noun ("additional changes") adds nothing
    ("The code review of the billing module is booked for May 12",
     "The code review of the billing module was pushed to May 19 due to additional changes",
     "when is the code review of the billing module"),
    # the speaker's own value in the same frame of words, with no word of change (issue 34.3)
    ("I've completed 10 practice exams for the AWS certification so far",
     "Quick update: I recently completed 14 practice exams for the AWS certification",
     "how many practice exams have I completed for the AWS certification"),
    ("I set aside $2,000 for the venue deposit and $800 for catering",
     "I've set aside $2,400 for the venue deposit, can you check my wedding budget?",
     "how much have I set aside for the venue deposit"),
    # a target that changed, the newer sentence naming it a target after its value
    ("I'm targeting 20 pages a day for my novel draft",
     "My daily pages for the novel draft were adjusted to 25 pages, which is my new target",
     "how many pages a day am I targeting for my novel draft"),
]  # fmt: skip


@pytest.mark.parametrize(("old_title", "new_title", "query"), UPDATES, ids=[u[2] for u in UPDATES])
def test_a_newer_update_of_the_same_subject_ranks_first_and_marks_the_older(cli, old_title, new_title, query):
    old, new = load(cli, "app", old_title, new_title)
    rows = search(cli, query, "app")
    assert [r["id"] for r in rows][:2] == [new, old]
    by_id = {r["id"]: r for r in rows}
    assert (by_id[old]["possibly_superseded_by"], by_id[new]["possibly_superseded_by"]) == (new, None)
    assert by_id[old]["superseded_by"] is None  # only an explicit link makes it certain
    plain = cli("search", query, "--project", "app", "--mode", "keyword").stdout
    assert f"[maybe replaced by #{new}] {old_title}" in plain


# Related memories that are both true. The newer one often has a word of change and a value, and the two
# share most of their words: only what tells them apart keeps them both current.
BOTH_VALID = [
    ("Redis caches user sessions with a TTL of 30 minutes",
     "Memcached now caches rendered pages with a TTL of 5 minutes",
     "cache TTL"),
    ("API rate limit for the free tier is 100 requests per minute",
     "API rate limit for the enterprise tier is now 5000 requests per minute",
     "API rate limit"),
    ("The production database runs Postgres 14",
     "The staging database was upgraded to Postgres 16",
     "which Postgres version does the database run"),
    ("The worker pool has 4 workers",
     "Added a second worker pool, now with 8 workers",
     "worker pool size"),
    ("Login endpoint p95 latency is 120ms",
     "Search endpoint p95 latency improved to 80ms",
     "endpoint p95 latency"),
    ("Sprint 1 targets March 29 for auth",
     "Sprint 2 now targets April 19 for analytics",
     "sprint target date"),
    ("Alice's monthly budget for the team is $300",
     "Bob's monthly budget for the team increased to $500",
     "monthly budget for the team"),
    ("The staging cluster runs 2 replicas",
     "The production cluster now runs 6 replicas",
     "how many replicas does the cluster run"),
    ("src/orders.py retries failed payments 3 times",
     "src/auth.py now allows a clock skew of 30 seconds",
     "retries"),
    ("Unit tests take 40 seconds on CI",
     "Integration tests now take 12 minutes on CI",
     "how long do tests take on CI"),
    # no word of change: a newer plain statement of another thing's value
    ("Python services use a connection pool of 20",
     "The Go gateway uses a connection pool of 50",
     "connection pool size"),
    ("The login service listens on port 8080 in docker compose",
     "The billing service listens on port 9090 in docker compose",
     "which port does the service listen on in docker compose"),
    ("CI runs 1,200 unit tests in 3 minutes",
     "CI runs 85 end-to-end tests in 14 minutes",
     "how many tests does CI run"),
    ("The frontend bundle is 240 KB gzipped",
     "The backend Docker image is 180 MB",
     "how big is the bundle or image"),
    # a goal and where things stand are two facts
    ("The goal for test coverage of the API is 90%",
     "Test coverage of the API now reached 85%",
     "API test coverage"),
    # "by 5%" is how much it changed, not what it is
    ("Checkout conversion on the web store is 3.1%",
     "Checkout conversion on the web store increased by 5% after the redesign",
     "checkout conversion on the web store"),
    # a count and a duration are two kinds of value even with no unit in the value itself
    ("The import job handles 500 files per run",
     "The import job now runs every 30 minutes",
     "import job"),
    # a number is compared with a count only where that count's noun is next to it
    ("Fixed 12 bugs in the parser this sprint",
     "The parser sprint now has a velocity of 40",
     "parser bugs this sprint"),
    # the words of the question are in both sentences, but what changed is another thing
    ("The login page loads in 900ms on mobile",
     "Login page work continues, and the CI build time improved to 4 minutes",
     "how fast does the login page load"),
    # "now that" says when, not what changed; a plain date says when something happened
    ("Release notes for v2 are due on May 2",
     "Now that May 9 is here, the release notes for v2 went out to customers",
     "release notes for v2"),
    # a word of addition before the value, however far ("also ... now with 2 instances")
    ("We run the web app in us-east-1 with 4 instances",
     "We also run the web app in eu-west-1, now with 2 instances",
     "how many instances does the web app run"),
    # the newer memory states the older value too: it is not what was replaced
    ("The grocery budget went up to $550 a month",
     "We raised the grocery budget to $500 in May and later to $550 a month",
     "grocery budget"),
    # a verb that only carries a value ("takes") is not what the value is of: a suite and a build
    ("The unit test suite takes 2 minutes",
     "The Docker build now takes 9 minutes",
     "how long does it take"),
    # a mere mention does not undo a change: the older value was stated as one, the newer is a plain number
    ("Commits merged into the main branch have now reached 165",
     "Writing the changelog: v1.0 of the main branch shipped with 150 commits merged",
     "how many commits are merged into the main branch"),
    ("The dashboard API response time has improved to 250ms after caching",
     "Retro notes: the dashboard API response time sat at 800ms for most of March",
     "what is the dashboard API response time"),
    # "new" names a new thing: a value after another verb says when it starts, not what it is
    ("The mobile release deadline is April 20",
     "My new mobile release checklist starting April 25 has 30 items",
     "mobile release deadline"),
    # a plain statement with no word of change before its value: one meeting that ran long, not a new rule
    ("Sprint planning for the mobile team usually lasts 2 hours",
     "Today's sprint planning for the mobile team ran long, the mobile team planning lasted 3 hours",
     "how long is sprint planning for the mobile team"),
    # "pushed" changes a value only with "to" before it; pushing commits is no update of their count
    ("Pushed 150 commits to the release branch last month",
     "The release branch pushed to GitHub today with 120 commits",
     "how many commits are on the release branch"),
    # someone else's value: "their" price is not "our" price (issue 34.3)
    ("We changed the premium price to $3.99 per month",
     "Streaky just raised their premium price to $5.99 per month, interesting move",
     "what does premium cost per month"),
    ("I charge $45 per hour for math tutoring",
     "My colleague told me she raised her rate to $60 per hour for math tutoring",
     "what do I charge per hour for math tutoring"),
    # one value a period, in the same frame of words
    ("I spent $120 on groceries in January",
     "I spent $150 on groceries in February, which felt like a lot",
     "how much did I spend on groceries"),
    # a value in a question or a wish is not a state
    ("I've saved $3,000 for the Japan trip",
     "Should I have saved $4,000 for the Japan trip instead?",
     "how much have I saved for the Japan trip"),
    ("I want to run 40 km per week before the marathon",
     "I ran 32 km per week in March before the marathon",
     "how many km per week do I run before the marathon"),
    # the same frame of words, of another kind of role ("for executive ..." against "for director ...")
    ("I'm worried that I only secured 3 interviews for executive producer roles this spring",
     "Good news, I secured 2 interviews for director roles this spring, how do I prepare?",
     "how many interviews have I secured for executive producer roles"),
    # the same frame of words, said of another thing, not by the speaker of their own
    ("The build cache saves about 40% of CI time",
     "Test sharding saves 25% of CI time on top of the cache",
     "how much CI time is saved"),
]  # fmt: skip


@pytest.mark.parametrize(("older", "newer", "query"), BOTH_VALID, ids=[b[2] for b in BOTH_VALID])
def test_related_memories_that_are_both_true_are_never_marked(cli, older, newer, query):
    load(cli, "svc", older, newer)
    rows = search(cli, query, "svc")
    assert rows, "the question should find them"
    assert [r["possibly_superseded_by"] for r in rows] == [None] * len(rows)


def test_other_projects_and_older_memories_never_replace(cli):
    load(cli, "one", "Max upload size is 10 MB for attachments")
    load(cli, "two", "Max upload size is now 25 MB")
    assert all(r["possibly_superseded_by"] is None for r in search_all(cli, "max upload size"))
    older, newer = load(
        cli, "three", "Max upload size is now 25 MB", "Max upload size is 10 MB for attachments"
    )
    by_id = {r["id"]: r for r in search(cli, "max upload size", "three")}
    assert (
        by_id[newer]["possibly_superseded_by"] is None
    )  # the older one's word of change does not reach back


def search_all(cli: Any, query: str) -> list[dict[str, Any]]:
    result = cli("search", query, "--mode", "keyword", "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def test_an_update_needs_a_word_of_change_and_a_value_and_code_blocks_do_not_count():
    assert updates(clauses("The response time has improved to 250ms")) != []
    assert updates(clauses("The response time is 250ms")) == []  # a value, no word of change
    assert updates(clauses("The response time has improved a lot")) == []  # a change, no value
    assert updates(clauses("Here:\n```\nlimit = now(); quota increased to 1200\n```\nthoughts?")) == []


def values_changed(text: str) -> list[str]:
    return [u.value for u in updates(clauses(text))]


def test_the_value_a_word_of_change_changed_is_the_first_after_it_not_when_or_a_new_statement():
    assert values_changed("Grocery budget: I increased it to $550 starting September 15") == ["550"]
    assert values_changed("The design review was rescheduled to March 22 at 4:30 PM") == ["mar22", "4:30pm"]
    assert values_changed("My accuracy improved, I've completed 12 problems") == []
    assert values_changed("Zotero library update: now I have 45 sources") == ["45"]  # "now" leads a clause
    assert values_changed("The new sprint deadline of April 5 holds") == ["apr5"]
    assert values_changed("My new senior producer role starting July 1 is busy") == []
    assert values_changed("Pushed the branch with 150 commits") == []
    assert values_changed("We pushed the product launch to Friday") == ["fri"]


def test_only_a_memory_with_a_digit_or_a_weekday_is_read_for_values():
    """infer() skips a newer memory _may_state rules out: no text that holds a value may be ruled out."""
    from bench.update_pairs import BOTH_VALID, UPDATES, UPDATES_2
    from cmem_cli.services.truth.updates import _may_state, clauses

    texts = [text for pair in (*UPDATES, *BOTH_VALID, *UPDATES_2) for text in pair[:2]]
    texts += ["The deploy moved to Friday", "No numbers here, only words about the cache", "see `x`"]
    holding = [text for text in texts if any(t.value for clause in clauses(text) for t in clause)]
    assert len(holding) > 50
    assert all(_may_state(text) for text in holding)
    assert not _may_state("No numbers here, only words about the cache")
