"""Inferred supersession on pairs no rule was written for: how many real updates it marks, how many
related-but-valid pairs it wrongly marks.

BEAM's 37 knowledge-update questions (bench/beam.py) shaped the rule in cmem_cli/services/truth/updates.py, and
tests/test_updates.py holds the pairs written while designing it. These pairs are in the voice of a
developer's chat with an assistant: facts that changed (a duration, a version, a size, a count, a date, a
time, a rate, an amount) and related facts that are both true (two environments, two apps, two people, a
goal and a state, a second thing added, two versions, two services). Each pair is an older and a newer
message of one project a day apart, and a question about the subject; the rule runs over the two as a
search's first rows (:func:`cmem_cli.services.truth.updates.infer`).

The first set (16 + 16) was written before it was run on any rule; the rule was then changed in view of
its misses, so it is no longer unseen. The second set (12 + 12) was written after those changes and run
once. docs/retrieval.md ("Facts that change") has the figures of each rule.

    python -m bench.update_pairs [--verbose]

It prints, for the code it runs with and each set: updates marked (the older one ``possibly_superseded_by``
the newer) and related pairs marked (a false hint). These are small samples: one pair is 0.06 or 0.08.
"""

from __future__ import annotations

import argparse

DAY_MS = 86_400_000

# (older message, newer message, question)
UPDATES = [
    ("I'm setting up the CI pipeline for my Django app and the full test suite takes about 14 minutes right "
     "now, which feels slow, any ideas?",
     "Good news, after splitting the tests across 4 parallel jobs the suite is down to 6 minutes, what else "
     "can I optimize in the pipeline?",
     "How long does the test suite take in CI?"),
    ("We're running PostgreSQL 13 on the production server and I'm wondering if I should enable logical "
     "replication for the analytics replica.",
     "I upgraded production to PostgreSQL 15 last weekend, so can you check whether the replication settings "
     "need to change?",
     "Which PostgreSQL version is production running?"),
    ("My React app's bundle is 1.8 MB and the Lighthouse score is only 62, how do I start code splitting?",
     "After lazy loading the routes the bundle shrank to 900 KB, how can I get it smaller?",
     "How big is the React bundle?"),
    ("I have 42 open issues in the GitHub backlog for the CLI tool and I need a way to triage them before "
     "the release.",
     "We closed a bunch this week and the backlog now has 27 open issues, should I label the rest by "
     "priority?",
     "How many open issues are in the backlog?"),
    ("The staging deploy is scheduled for Thursday at 3 PM, what checks should I run before it?",
     "The staging deploy got moved to Friday at 11 AM because the QA team needs more time, should I change "
     "the checklist?",
     "When is the staging deploy?"),
    ("Our API currently allows 60 requests per minute per user, and some customers are hitting the limit.",
     "I raised the per-user rate limit to 120 requests per minute yesterday, how do I monitor whether that's "
     "enough?",
     "What is the per-user rate limit of the API?"),
    ("I'm using Node 16 for the backend service and npm keeps warning about engine versions.",
     "I switched the backend service to Node 20 this morning and the warnings are gone, do I need to update "
     "the Dockerfile too?",
     "What Node version does the backend service use?"),
    ("The monthly AWS bill for the side project is around $85 and I want to cut it down.",
     "After moving the database to a smaller instance the monthly AWS bill dropped to $52, are there other "
     "savings?",
     "How much is the monthly AWS bill?"),
    ("The Redis cache hit rate is sitting at 71% and I think the TTLs are too short.",
     "With longer TTLs the cache hit rate has climbed to 88%, is that good enough for a read-heavy app?",
     "What is the Redis cache hit rate?"),
    ("My team has 5 engineers working on the mobile app and we're struggling to keep up with reviews.",
     "We hired two more people, so the mobile team is now 7 engineers, how should we split code reviews?",
     "How many engineers are on the mobile team?"),
    ("The nightly ETL job finishes around 4:30 AM, which is cutting close to the dashboards refresh.",
     "After the query rewrite the nightly ETL job now finishes at 2:15 AM, so should I move the dashboard "
     "refresh earlier?",
     "When does the nightly ETL job finish?"),
    ("Test coverage on the payments module is 64% and my lead wants it higher.",
     "I added tests for the refund flow and coverage on the payments module went up to 79%, which areas "
     "should I cover next?",
     "What is the test coverage of the payments module?"),
    ("The Docker image for the worker is 1.2 GB and pulls take forever on the build agents.",
     "Using a slim base image I got the worker's Docker image down to 340 MB, can I go further with "
     "multi-stage builds?",
     "How big is the worker's Docker image?"),
    ("The release of version 2.3 is planned for March 14.",
     "We pushed the 2.3 release back to March 21 because of the migration bug.",
     "When is the 2.3 release?"),
    ("Our Kafka cluster has 3 brokers and I'm seeing consumer lag during peaks.",
     "I scaled the Kafka cluster to 5 brokers and the consumer lag during peaks is mostly gone, should I also "
     "add partitions?",
     "How many brokers does the Kafka cluster have?"),
    ("The p99 latency of the search endpoint is 1.4 seconds, which is way over our SLO.",
     "After adding the index, the search endpoint's p99 latency improved to 380ms, how do I keep it there?",
     "What is the p99 latency of the search endpoint?"),
]  # fmt: skip

# (older message, newer message, question): both stay true
BOTH_VALID = [
    ("The staging database runs on a db.t3.medium instance with 4 GB of memory.",
     "The production database now runs on a db.r5.large with 16 GB of memory, do I need different connection "
     "pool settings?",
     "How much memory does the database have?"),
    ("The iOS app's crash-free rate is 99.2% this month.",
     "The Android app's crash-free rate is now 97.5%, why might it be lower than iOS?",
     "What is the app's crash-free rate?"),
    ("Our unit tests run in 2 minutes on CI.",
     "Our end-to-end tests now run in 25 minutes on CI, can we parallelize them?",
     "How long do the tests take on CI?"),
    ("The login page has a 3% bounce rate.",
     "The pricing page now has a 41% bounce rate after the redesign, is that normal?",
     "What is the page's bounce rate?"),
    ("I set the goal of reaching 80% test coverage on the API by June.",
     "Coverage on the API is currently 72%, what should I test first to get closer?",
     "API test coverage"),
    ("The frontend repo has 120 open pull requests.",
     "The backend repo has 35 open pull requests now that we cleaned up stale ones.",
     "How many open pull requests are there?"),
    ("We deploy the web app to us-east-1 with 4 instances.",
     "We also deploy the web app to eu-west-1, now with 2 instances, how do I route traffic?",
     "How many instances does the web app run?"),
    ("The daily active users of the app were 12,000 in January.",
     "Weekly active users reached 45,000 in February, how do I compare those numbers?",
     "How many active users does the app have?"),
    ("Alice reviewed 14 pull requests last sprint.",
     "Bob reviewed 9 pull requests this sprint, how can I balance reviews?",
     "How many pull requests were reviewed?"),
    ("The free plan allows 3 projects per account.",
     "The pro plan now allows 50 projects per account, how should I show that on the pricing page?",
     "How many projects does a plan allow?"),
    ("The API gateway times out requests after 30 seconds.",
     "The database driver now times out queries after 5 seconds, could that conflict with the gateway?",
     "What are the timeouts?"),
    ("I wrote 3 blog posts about the migration in April.",
     "I gave 2 talks about the migration in May, should I turn them into posts?",
     "How many posts about the migration did I write?"),
    ("The build cache saves about 40% of CI time.",
     "The test sharding now saves 25% of CI time on top of the cache, what else can I try?",
     "How much CI time is saved?"),
    ("Version 1.4 of the SDK supports Python 3.8.",
     "Version 2.0 of the SDK now requires Python 3.10, how do I tell users?",
     "Which Python version does the SDK support?"),
    ("My morning standup is at 9:30 AM.",
     "The design sync moved to 2 PM on Wednesdays, can you help me plan my day?",
     "What time is the meeting?"),
    ("The search service uses 8 GB of heap.",
     "The indexing service got its heap raised to 12 GB, will that fit on the node?",
     "How much heap does the service use?"),
]  # fmt: skip

# A second set, written after the rule was changed in view of the first set's misses (so the first set is
# no longer unseen), and run once.
UPDATES_2 = [
    ("The Elasticsearch cluster keeps 30 days of logs before rollover, which eats a lot of disk.",
     "We changed log retention in Elasticsearch to 14 days to save disk, will that break the weekly reports?",
     "How many days of logs does Elasticsearch keep?"),
    ("Our sprint velocity has been around 34 points for the last three sprints.",
     "Velocity jumped to 41 points this sprint after we split the big stories, is that sustainable?",
     "What is our sprint velocity?"),
    ("The mobile app's cold start takes 3.2 seconds on older Android phones.",
     "After deferring the analytics SDK, cold start on older Android phones is now 1.9 seconds, what next?",
     "How long is the cold start on older Android phones?"),
    ("I'm on Terraform 1.3 for the infra repo and the AWS provider keeps complaining.",
     "I bumped the infra repo to Terraform 1.6 and the provider warnings went away, anything to check?",
     "Which Terraform version does the infra repo use?"),
    ("The code freeze for the Q3 release starts on September 12.",
     "Management postponed the Q3 code freeze to September 19, how should we re-plan the sprint?",
     "When does the Q3 code freeze start?"),
    ("Our error budget burn is 2.5% for the month so far.",
     "The error budget burn for the month rose to 4.1% after Tuesday's outage, should we freeze deploys?",
     "How much of the error budget have we burned this month?"),
    ("The team retro happens every other Tuesday at 4 PM.",
     "We moved the team retro to Wednesdays at 10 AM so the remote folks can join, can you update the notes?",
     "When is the team retro?"),
    ("The onboarding doc lists 23 steps for a new developer's laptop setup.",
     "I trimmed the laptop setup in the onboarding doc to 15 steps with a bootstrap script, does it look ok?",
     "How many steps does the laptop setup in the onboarding doc have?"),
    ("The GraphQL API serves about 1,200 requests per second at peak.",
     "Peak traffic on the GraphQL API has grown to 2,000 requests per second since the launch.",
     "How many requests per second does the GraphQL API serve at peak?"),
    ("The max connection pool size for the orders service is 20.",
     "I increased the orders service's max connection pool size to 50 after the timeouts last week.",
     "What is the max connection pool size of the orders service?"),
    ("The nightly backup of the main database is about 85 GB.",
     "With compression turned on, the nightly backup of the main database is now 31 GB.",
     "How big is the nightly database backup?"),
    ("My side project has 340 stars on GitHub.",
     "The side project just reached 500 stars on GitHub after the Hacker News post!",
     "How many GitHub stars does my side project have?"),
]  # fmt: skip

BOTH_VALID_2 = [
    ("The orders service has a max connection pool size of 20.",
     "The billing service now has a max connection pool size of 40, is that too high for Postgres?",
     "What is the max connection pool size?"),
    ("The web team's sprint velocity is 34 points.",
     "The platform team's velocity jumped to 28 points this sprint.",
     "What is the sprint velocity?"),
    ("Logs in Elasticsearch are kept for 30 days.",
     "Metrics in Prometheus are now kept for 90 days, can the disk handle it?",
     "How long are they kept?"),
    ("The target for cold start is under 2 seconds.",
     "Cold start is now 2.6 seconds on older phones, what else can I defer?",
     "How long is the cold start?"),
    ("The staging environment runs Terraform 1.6.",
     "The legacy environment is still on Terraform 1.2 and we can't upgrade it yet.",
     "Which Terraform version is used?"),
    ("The iOS release is planned for June 3.",
     "The Android release was moved to June 10 because of the Play review.",
     "When is the release?"),
    ("I have 12 open tickets assigned to me in Jira.",
     "Priya now has 8 open tickets assigned in Jira after the reshuffle.",
     "How many open tickets are assigned?"),
    ("The API docs site gets 3,000 visits a week.",
     "The blog also gets about 1,500 visits a week now, should we link them?",
     "How many visits a week?"),
    ("We decided on a budget of $200 a month for monitoring tools.",
     "Datadog alone now costs $180 a month, what can we drop?",
     "What is the monthly budget for monitoring tools?"),
    ("The backend repo has 78% test coverage.",
     "The frontend repo's test coverage went up to 61% this quarter.",
     "What is the test coverage of the repo?"),
    ("The design review for the checkout flow is on Monday at 2 PM.",
     "The design review for the search page was set for Tuesday at 11 AM.",
     "When is the design review?"),
    ("We ran 4 load tests against the staging cluster in May.",
     "We ran 6 chaos experiments against the staging cluster in June, what did we learn?",
     "How many tests did we run against the staging cluster?"),
]  # fmt: skip


def marked(older: str, newer: str, query: str) -> bool:
    """Whether the rule marks the older message replaced by the newer one (a day later, one project)."""
    from cmem_cli.services.truth.updates import infer

    rows = [
        {"id": 1, "kind": "observation", "project": "app"},
        {"id": 2, "kind": "observation", "project": "app"},
    ]
    found = infer(rows, {1: older, 2: newer}, {1: 0, 2: DAY_MS}, query)
    return found.get(1) == 2


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--verbose", action="store_true", help="name each pair the rule gets wrong")
    args = parser.parse_args()
    for name, updates, valid in (("first set", UPDATES, BOTH_VALID), ("second set", UPDATES_2, BOTH_VALID_2)):
        missed = [q for old, new, q in updates if not marked(old, new, q)]
        false = [q for old, new, q in valid if marked(old, new, q)]
        hit = len(updates) - len(missed)
        print(
            f"{name}: updates marked {hit}/{len(updates)} ({hit / len(updates):.3f}), "
            f"related pairs marked (false hints) {len(false)}/{len(valid)} ({len(false) / len(valid):.3f})"
        )
        if args.verbose:
            for query in missed:
                print("  missed:", query)
            for query in false:
                print("  false: ", query)


if __name__ == "__main__":
    main()
