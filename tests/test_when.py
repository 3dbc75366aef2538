"""The time a question names, read against its clock (`threadkeep.when`)."""

from datetime import UTC, datetime

import pytest

from threadkeep.when import named_span

NOW = datetime(2023, 5, 30, 10, 0, tzinfo=UTC)  # a Tuesday


def days(question: str) -> tuple[str, str] | None:
    span = named_span(question, NOW)
    return None if span is None else (span.since.date().isoformat(), span.until.date().isoformat())


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which book did I finish a week ago?", ("2023-05-19", "2023-05-26")),
        ("I mentioned an investment four weeks ago, what did I buy?", ("2023-04-28", "2023-05-05")),
        ("what did we fix 3 days ago", ("2023-05-26", "2023-05-28")),
        ("How many films did I watch in the last 3 months?", ("2023-02-28", "2023-05-30")),
        ("What did we do last Saturday?", ("2023-05-26", "2023-05-28")),
        ("the restaurant we talked about yesterday", ("2023-05-28", "2023-05-30")),
        ("What did Gina find for her store on 1 February, 2023?", ("2023-01-31", "2023-02-03")),
        ("What happened on October 13th, 2022?", ("2022-10-12", "2022-10-15")),
        ("What did John do in May 2023?", ("2023-04-30", "2023-06-02")),
        ("the first BBQ in June", ("2022-05-31", "2022-07-02")),  # no June yet this year: last year's
        ("the meeting on 2023-03-05", ("2023-03-04", "2023-03-07")),
        ("上周说的那个同步问题", ("2023-05-19", "2023-05-26")),
        ("两个月前的报错", ("2023-03-15", "2023-04-14")),
        ("3月5日的会议", ("2023-03-04", "2023-03-07")),
        ("2022年12月的发票", ("2022-11-30", "2023-01-02")),
    ],
)
def test_a_named_time_becomes_a_span_with_some_slack(question, expected):
    assert days(question) == expected


def test_a_date_named_outright_wins_over_a_phrase_relative_to_the_clock():
    assert days("What did Maria do last weekend before April 10, 2023?") == ("2023-04-09", "2023-04-12")


def test_several_named_times_give_the_span_over_all_of_them():
    assert days("did I go in March 2023 or in May 2023?") == ("2023-02-28", "2023-06-02")


@pytest.mark.parametrize(
    "question",
    [
        "How many months ago did I book the Airbnb?",  # asks for a time, names none
        "Which device did I get first, the Galaxy S22 or the XPS 13?",
        "How much faster was I than my previous year's time?",  # a thing of then, not when it was said
        "I am moving the furniture this weekend, any tips?",  # still to come
        "I may try 5 times",
        "点图标没反应",
        "E1024 怎么处理",
    ],
)
def test_a_question_naming_no_time_has_no_span(question):
    assert named_span(question, NOW) is None
