"""`threads/interleave.py`: decoding rules and post-passes for interleaved topics, one case each.

Decoding cases set the scores by hand (as `test_small_group_rules.py` does) so that the scored
choice is known, and check what the rules make of it; post-pass cases give the assigner's threads
by hand. Every case would fail if its rule stopped firing or fired past its guard.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from scored_decoding import decode_picks

from threadkeep.model import Message
from threadkeep.threads import cues, interleave, learned
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings

START = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
SETTINGS = ThreadSettings()


def msg(mid: str, sender: str, minute: float, text: str) -> Message:
    return Message(mid, "c", sender, START + timedelta(minutes=minute), text)


def decode(messages: list[Message], picks: dict[str, str | None], rules: bool = True) -> dict[str, str | None]:
    return decode_picks(messages, picks, interleave_rules=rules)


DOG = [
    msg("d1", "da", 0, "Bailey's limping since his walk, should I ring the vet?"),
    msg("d2", "mam", 2, "Which leg"),
    msg("d3", "da", 3, "Front left, he won't put weight on it"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Also who's collecting Nana tomorrow, she lands at 3", True),
        ("does anyone know the netflix password", True),
        ("请问拖布多久换一次啊", True),
        ("周五晚上机房割接 谁值班", True),
        ("Which leg", False),
        ("哪个卫生间的 大的还是小的", False),
        ("Sunday lunch at The Anchor works for me", False),
        ("And for Grandad's 80th, what about Sunday lunch on the 29th at The Anchor?", True),
        ("what about the 30th?", False),
        ("And the 29th works for you?", False),
    ],
)
def test_a_question_to_the_group_or_after_a_change_of_subject_opens_a_topic(text: str, expected: bool) -> None:
    assert cues.opens_topic(text) is expected


def test_answer_types_and_calls() -> None:
    assert cues.asks_who("周五晚上机房割接 谁值班") and cues.asks_who("who's collecting Nana")
    assert not cues.asks_who("which version?")
    assert cues.asks_when("what time is everyone landing friday") and cues.asks_when("明天几点到？")
    assert not cues.asks_when("how to repair it when i pressed Advanced Settings?")
    assert cues.volunteers("我") and cues.volunteers("I can if I get the car")
    assert not cues.volunteers("i can't compile gspca")
    assert not cues.volunteers("I will definitely check out the website later today")
    assert cues.tells_time("10:40 from gatwick") and cues.tells_time("下午两点半左右上门")
    assert not cues.tells_time("Will Ubuntu 12.04 have it")
    assert cues.calls_for_answer("有人吗") and cues.calls_for_answer("anyone? re insurance")
    assert cues.calls_for_answer("crontab的事 有人知道吗")
    assert not cues.calls_for_answer("Boiler guy can come Thursday, does 10am work for anyone?")
    assert cues.points_back("how can i install that darn thing?") and not cues.points_back("anyone deploying to pages?")


def test_a_topic_opening_question_leaves_the_thread_it_shares_no_word_with() -> None:
    messages = [*DOG, msg("n1", "mam", 4, "Also who's collecting Nana tomorrow, she lands at 3")]
    picks = {"d1": None}  # the scores follow the latest message
    assert decode(messages, picks, rules=False)["n1"] == "d3"
    assert decode(messages, picks)["n1"] is None


def test_a_call_for_help_after_ones_own_report_stays_with_it() -> None:
    messages = [
        msg("r1", "sken", 0, "i just wanted to ask how can i delete google earth, i installed it by terminal"),
        msg("r2", "sken", 0.5, "can anybody help meeeeeee!"),
    ]
    assert decode(messages, {"r1": None})["r2"] == "r1"


def test_a_time_answers_the_latest_when_question() -> None:
    messages = [
        msg("a1", "jess", 0, "Airbnb is booked!! £612 for 4 nights so £122.40 each"),
        msg("a2", "marcus", 1, "ooh the balcony 😍 sent"),
        msg("w1", "marcus", 2, "what time is everyone landing friday"),
        msg("w2", "leah", 4, "10:40 from gatwick"),
    ]
    picks = {"a1": None, "w2": None}  # the scores would start a thread with the answer
    assert decode(messages, picks, rules=False)["w2"] is None
    assert decode(messages, picks)["w2"] == "w1"


def test_an_offer_after_a_later_other_question_is_not_taken_for_its_answer() -> None:
    messages = [
        msg("w1", "shen", 0, "周五晚上机房割接 谁值班"),
        msg("q1", "jn", 1, "今天的每日任务刷新了吗"),
        msg("w2", "wu", 2, "我"),
    ]
    assert decode(messages, {"w1": None, "q1": None, "w2": None})["w2"] is None


def test_staff_takes_up_an_unanswered_report_after_pausing_its_own_thread() -> None:
    messages = [
        msg("r1", "a", 0, "昨晚升级完固件 机器一直报主刷缠绕"),
        msg("r2", "kf", 1, "收到 我问下售后工程师"),
        msg("q1", "b", 2, "请问拖布多久换一次啊"),
        msg("m1", "d", 3, "我家的地图突然没了 要重新建图吗"),
        msg("q2", "c", 4, "我是两三个月换一次"),
        msg("q3", "b", 4.5, "好的 谢谢"),
        msg("m2", "kf", 5, "您是安卓还是苹果"),
    ]
    picks = {"r1": None, "q1": None, "m1": None, "q2": "q1", "m2": "r2"}  # the scores follow kf's own wait
    assert decode(messages, picks, rules=False)["m2"] == "r2"
    assert decode(messages, picks)["m2"] == "m1"


def test_a_question_asked_again_joins_the_first_asking() -> None:
    messages = [
        msg("i1", "dev", 0, "does the car hire include insurance or do we need the excess cover thing"),
        msg("o1", "leah", 10, "I've got two adapters, will bring one"),
        msg("i2", "dev", 54, "anyone? re insurance"),
    ]
    groups, links = interleave.asked_again(messages, [["i1"], ["o1"], ["i2"]], {}, SETTINGS)
    assert sorted(groups) == [["i1", "i2"], ["o1"]] and links["i2"] == "i1"


def test_a_new_question_on_the_same_program_hours_after_an_answer_is_new() -> None:
    messages = [
        msg("p1", "kim", 0, "do i have to set up the certificate through the apple developer site for appium?"),
        msg("p2", "lee", 2, "yes, you need a provisioning profile on real devices"),
        msg("p3", "kim", 150, "can anyone give me a link to download appium 1.6.3?"),
    ]
    groups, _ = interleave.asked_again(messages, [["p1", "p2"], ["p3"]], {}, SETTINGS)
    assert sorted(groups) == [["p1", "p2"], ["p3"]]


SLACK = [
    msg("s1", "carlos", 0, "Acme just emailed, their CSV export comes back empty"),
    msg("s2", "theo", 30, "found it, the date filter uses UTC midnight; fix deployed"),
    msg("s3", "carlos", 31, "🙏"),
    msg("l1", "theo", 150, "lunch? thinking the poke place"),
    msg("l2", "carlos", 152, "[gif]"),
]


def test_a_stray_confirmation_goes_back_to_the_fix_it_confirms() -> None:
    messages = [*SLACK, msg("s4", "carlos", 170, "Acme confirmed exports work now 👍")]
    groups, links = interleave.confirmed_fix(messages, [["s1", "s2", "s3"], ["l1", "l2", "s4"]], {}, SETTINGS)
    assert sorted(groups) == [["l1", "l2"], ["s1", "s2", "s3", "s4"]] and links["s4"] == "s3"


def test_not_working_is_no_confirmation_to_move() -> None:
    messages = [*SLACK, msg("s4", "carlos", 170, "exports still not working")]
    groups, _ = interleave.confirmed_fix(messages, [["s1", "s2", "s3"], ["l1", "l2", "s4"]], {}, SETTINGS)
    assert sorted(groups) == [["l1", "l2", "s4"], ["s1", "s2", "s3"]]


def test_the_askers_statement_after_their_own_new_topic_goes_back_to_their_thread() -> None:
    messages = [
        *DOG,
        msg("n1", "mam", 4, "Also who's collecting Nana tomorrow, she lands at 3"),
        msg("n2", "mam", 4.1, "Check his paw first, he got a thorn in it last summer"),
    ]
    picks = {"d1": None, "n1": None}  # the scores follow the latest message
    assert decode(messages, picks, rules=False)["n2"] == "n1"
    assert decode(messages, picks)["n2"] == "d3"
    # A statement that shares a word with the new question goes on with it.
    messages[-1] = msg("n2", "mam", 4.1, "Nana said the train might be easier")
    assert decode(messages, picks)["n2"] == "n1"


def test_ones_own_question_does_not_hold_ones_answer_to_an_older_when_question() -> None:
    messages = [
        msg("a1", "jess", 0, "Airbnb is booked!! £612 for 4 nights so £122.40 each"),
        msg("w1", "marcus", 2, "what time is everyone landing friday"),
        msg("w2", "leah", 4, "10:40 from gatwick"),
        msg("c1", "dev", 6, "does the car hire include insurance or do we need the excess cover thing"),
        msg("w3", "dev", 7, "14:05 from manchester"),
    ]
    picks = {"a1": None, "c1": None}  # w3 follows its own question
    assert decode(messages, picks, rules=False)["w3"] == "c1"
    assert decode(messages, picks)["w3"] == "w2"


def test_an_offer_to_have_a_look_is_no_answer_to_a_who_question() -> None:
    assert cues.volunteers("I can if I get the car")
    assert not cues.volunteers("I'll have a look")
    assert not cues.volunteers("I'll check")


def test_a_confirmation_that_tells_the_fix_counts_past_the_cue_length() -> None:
    told = "0.14.1 is out, unpinned and it works now with my undated drafts 👍"
    assert len(told) > 48 and not cues.is_confirmation(told) and cues.confirms_fix(told)
    assert not cues.confirms_fix("Archives here and elsewhere no longer work, the links all go to a 404 page")
    assert not cues.confirms_fix("it works now on staging but does it work on production for everyone else?")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("大家早", True),
        ("早上好~", True),
        ("morning all", True),
        ("Hello everyone!", True),
        ("大家早点出门 会下雨", False),
        ("hi, my wifi keeps dropping since this morning", False),
        ("heads up: standup moves to 10:30 tomorrow", False),
    ],
)
def test_a_greeting_and_nothing_else(text: str, expected: bool) -> None:
    assert cues.greets(text) is expected


def test_a_greeting_leaves_the_thread_it_shares_no_word_with() -> None:
    messages = [*DOG, msg("g1", "nana", 4, "morning all")]
    picks = {"d1": None}  # the scores follow the latest message
    assert decode(messages, picks, rules=False)["g1"] == "d3"
    assert decode(messages, picks)["g1"] is None
    # After one's own line it goes on with it ("Front left…" then "morning all" by the same person).
    own = [*DOG, msg("g1", "da", 4, "morning all")]
    assert decode(own, picks)["g1"] == "d3"


def test_a_picture_goes_with_its_senders_own_latest_line() -> None:
    booked = [
        msg("b1", "jess", 0, "Airbnb is booked!! £612 for 4 nights, send whenever"),
        msg("b2", "marcus", 0.5, "what time is everyone landing friday"),
        Message("b3", "c", "jess", START + timedelta(minutes=1), "[image]", kind="image"),
    ]
    picks = {"b1": None, "b2": None, "b3": "b2"}  # the scores take the picture for an answer to b2
    assert decode(booked, picks, rules=False)["b3"] == "b2"
    assert decode(booked, picks)["b3"] == "b1"
    # A text line by the same sender is no picture: the scores decide.
    said = [*booked[:2], msg("b3", "jess", 1, "10:40 from gatwick")]
    assert decode(said, picks)["b3"] == "b2"


def test_a_duration_answers_the_latest_how_long_question() -> None:
    messages = [
        msg("r1", "zhang", 0, "点图标没反应，app打不开"),
        msg("r2", "staff", 1, "我看看"),
        msg("q1", "li", 4, "门锁电池一般能用多久？"),
        msg("a1", "wang", 5.5, "正常用大概8个月左右"),
    ]
    picks = {"q1": None, "a1": None}  # the scores would start a thread with the answer
    assert decode(messages, picks, rules=False)["a1"] is None
    assert decode(messages, picks)["a1"] == "q1"
    assert cues.asks_how_long("how long does the charge last?") and cues.tells_duration("about two weeks")
    assert not cues.tells_duration("version 3.1.4") and not cues.asks_how_long("门锁能连wifi吗")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("did you try the reset button under the panel? hold it 10 sec", True),
        ("你什么版本", True),
        ("您重启过路由器吗？", True),
        ("does anyone know the netflix password", False),
        ("any of you free on sunday?", False),
        ("你们周末有空吗", False),
        ("thank you!", False),  # no question
    ],
)
def test_a_question_to_you_asks_someone_there(text: str, expected: bool) -> None:
    assert cues.asks_you(text) is expected


def test_a_question_to_you_is_no_fresh_topic() -> None:
    # After a report two people discussed, a suggestion put as a question shares no word with it;
    # "you" says it answers someone there, so it may join their thread.
    messages = [
        msg("h1", "mom", 0, "Morning all. Is anyone else without hot water? Shower is ice cold"),
        msg("h2", "dad", 1.5, "The boiler shows a red light again"),
        msg("h3", "jake", 3, "did you try the reset button under the panel? hold it 10 sec"),
        msg("h4", "emma", 5, "what's for dinner on sunday?"),
    ]
    prepared = learned.prepare_conversation(messages, NameIndex(messages), SETTINGS)
    topics = interleave.topics_of(messages)
    assert learned.fresh_questions(prepared)[2] and learned.fresh_questions(prepared)[3]
    assert learned.fresh_questions(prepared, topics) == [True, False, False, True]
