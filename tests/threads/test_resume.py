"""`threads/resume.py`: a closed thread taken up again after a pause, one case each.

Each case gives the assigner's threads by hand (what it makes of a pause longer than `idle`: a new
thread) and checks which ones the resume step joins.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from threadkeep.model import Message
from threadkeep.threads import reconstruct_conversation
from threadkeep.threads.resume import resume_paused
from threadkeep.threads.rules import ThreadSettings

START = datetime(2026, 3, 10, 7, 0, tzinfo=timezone(timedelta(hours=1)))
SETTINGS = ThreadSettings()


def msg(mid: str, sender: str, minute: float, text: str, **extra) -> Message:
    return Message(mid, "c", sender, START + timedelta(minutes=minute), text, **extra)


def resumed(messages: list[Message], groups: list[list[str]]) -> list[list[str]]:
    merged, _ = resume_paused(messages, groups, {}, SETTINGS)
    return sorted(merged)


OVEN = [
    msg("o1", "maria", 0, "Oven 2 is showing error E7 again"),
    msg("o2", "tom", 1, "did you try turning it off at the wall?"),
    msg("o3", "maria", 3, "yes twice, still E7"),
]
FLOUR = [msg("f1", "priya", 20, "we're almost out of rye flour"), msg("f2", "maria", 22, "I'll add it to the order")]


def test_a_confirmation_hours_later_takes_up_the_thread_it_confirms() -> None:
    later = msg("o4", "maria", 230, "oven 2 works again, the sensor was replaced 👍")
    messages = [*OVEN, *FLOUR, later]
    assert resumed(messages, [["o1", "o2", "o3"], ["f1", "f2"], ["o4"]]) == [["f1", "f2"], ["o1", "o2", "o3", "o4"]]
    _, replies = resume_paused(messages, [["o1", "o2", "o3"], ["f1", "f2"], ["o4"]], {}, SETTINGS)
    assert replies["o4"] == "o3"


def test_a_new_report_or_question_after_the_pause_stays_a_thread_of_its_own() -> None:
    for text in ("oven 2 is broken again, it won't heat", "is oven 2 ok now?"):
        messages = [*OVEN, *FLOUR, msg("o4", "maria", 230, text)]
        assert ["o4"] in resumed(messages, [["o1", "o2", "o3"], ["f1", "f2"], ["o4"]]), text


def test_a_word_another_thread_used_meanwhile_is_no_evidence() -> None:
    other_oven = [msg("x1", "jake", 60, "oven 1 is fine, I baked the rolls in it"), msg("x2", "lena", 61, "great")]
    later = msg("o4", "maria", 230, "the oven works now 👍")
    messages = [*OVEN, *other_oven, later]
    assert ["o4"] in resumed(messages, [["o1", "o2", "o3"], ["x1", "x2"], ["o4"]])


def test_someone_who_was_not_in_the_thread_does_not_take_it_up() -> None:
    later = msg("o4", "jake", 230, "oven 2 works again 👍")
    assert ["o4"] in resumed([*OVEN, later], [["o1", "o2", "o3"], ["o4"]])


def test_whoever_went_to_look_comes_back_with_a_statement() -> None:
    messages = [
        msg("r1", "zhang", 0, "点图标没反应 app 打不开"),
        msg("r2", "staff", 1, "你什么版本"),
        msg("r3", "zhang", 2, "3.1.4"),
        msg("r4", "staff", 3, "好的我看看"),
        msg("r5", "staff", 58, "3.1.4 的图标缓存有问题，清一下缓存再打开就行"),
    ]
    assert resumed(messages, [["r1", "r2", "r3", "r4"], ["r5"]]) == [["r1", "r2", "r3", "r4", "r5"]]
    # Without the wait, a statement by staff an hour later sharing one word is a new topic.
    messages[3] = msg("r4", "staff", 3, "3.1.4 是最新版")
    messages[4] = msg("r5", "staff", 58, "图标的颜色换了")
    assert ["r5"] in resumed(messages, [["r1", "r2", "r3", "r4"], ["r5"]])


def test_a_question_to_whoever_went_to_look_takes_the_thread_up() -> None:
    waited = [*OVEN[:2], msg("o3", "tom", 3, "I'll ask the engineer and get back to you")]
    chase = msg("o4", "maria", 200, "@tom any news on oven 2?", mentions=("tom",))
    groups = [["o1", "o2", "o3"], ["f1", "f2"], ["o4"]]
    assert resumed([*waited, *FLOUR, chase], groups) == [["f1", "f2"], ["o1", "o2", "o3", "o4"]]
    # Asked of nobody, or of someone who did not go to look, the question is a new topic.
    for mentions in ((), ("priya",)):
        other = msg("o4", "maria", 200, "@tom any news on oven 2?", mentions=mentions)
        assert ["o4"] in resumed([*waited, *FLOUR, other], groups), mentions
    # ... and so is a question to the person who went to look, when they did not (no wait).
    answered = [*OVEN[:2], msg("o3", "tom", 3, "the engineer comes on monday")]
    assert ["o4"] in resumed([*answered, *FLOUR, chase], groups)


def test_beyond_max_span_the_thread_stays_closed() -> None:
    later = msg("o4", "maria", SETTINGS.max_span.total_seconds() / 60 + 60, "oven 2 works again 👍")
    assert ["o4"] in resumed([*OVEN, later], [["o1", "o2", "o3"], ["o4"]])


def test_both_assigners_hand_their_threads_to_the_resume_step() -> None:
    later = msg("o4", "maria", 230, "oven 2 works again, the sensor was replaced 👍")
    messages = [*OVEN, *FLOUR, later]
    for assigner in ("learned", "rules"):
        threads = reconstruct_conversation(messages, ThreadSettings(assigner=assigner))
        oven = next(thread for thread in threads if "o1" in thread.message_ids)
        assert "o4" in oven.message_ids, assigner
        alone = reconstruct_conversation(messages, ThreadSettings(assigner=assigner, resume_paused=False))
        assert "o4" not in next(thread for thread in alone if "o1" in thread.message_ids).message_ids, assigner


def test_a_confirmation_telling_the_fix_at_length_takes_the_thread_up() -> None:
    later = msg("o4", "maria", 230, "the engineer replaced the sensor on oven 2 this morning and it works now 👍")
    messages = [*OVEN, *FLOUR, later]
    assert resumed(messages, [["o1", "o2", "o3"], ["f1", "f2"], ["o4"]]) == [["f1", "f2"], ["o1", "o2", "o3", "o4"]]


PICKUP = [
    msg("p1", "nana", 0, "Flight delayed 2 hours now, landing 5ish"),
    msg("p2", "liam", 2, "No bother Nana, I'll keep an eye on the app"),
]
LUNCH = [msg("l1", "ciara", 40, "anyone want sushi for lunch?"), msg("l2", "mam", 41, "go on so")]


def test_a_report_back_after_ones_own_promise_takes_the_thread_up() -> None:
    groups = [["p1", "p2"], ["l1", "l2"], ["p3"]]
    back = msg("p3", "liam", 290, "Got her, on the way home")
    assert resumed([*PICKUP, *LUNCH, back], groups) == [["l1", "l2"], ["p1", "p2", "p3"]]
    # In Chinese, and with a word shared: 「我晚点挪回去试试」 … an hour … 「充电座挪回去了 地图回来了」.
    moved = [
        msg("m1", "liu", 0, "地图突然没了 房间全没了"),
        msg("m2", "staff", 2, "充电座挪过位置吗 挪回去试试"),
        msg("m3", "liu", 3, "行 我晚点挪回去试试"),
    ]
    later = msg("m4", "liu", 70, "充电座挪回去了 地图回来了 👍")
    assert resumed([*moved, later], [["m1", "m2", "m3"], ["m4"]]) == [["m1", "m2", "m3", "m4"]]


def test_without_a_promise_or_with_a_line_in_between_the_report_back_is_a_new_thread() -> None:
    groups = [["p1", "p2"], ["l1", "l2"], ["p3"]]
    back = msg("p3", "liam", 290, "Got her, on the way home")
    plain = [PICKUP[0], msg("p2", "liam", 2, "No bother Nana")]
    assert ["p3"] in resumed([*plain, *LUNCH, back], groups)
    # Liam spoke in the lunch thread since his promise: with no shared word, nothing ties "Got her" to it.
    spoke = [LUNCH[0], msg("l2", "liam", 41, "not for me thanks")]
    assert ["p3"] in resumed([*PICKUP, *spoke, back], groups)
    # A question after one's own promise asks something new.
    asked = msg("p3", "liam", 290, "is the car insured for me to drive?")
    assert ["p3"] in resumed([*PICKUP, *LUNCH, asked], groups)


DELAY = [
    msg("d1", "bot", 0, "order-db replica lag 312s for 5 minutes"),
    msg("d2", "wu", 1, "checking"),
    msg("d3", "kai", 9, "a big update on the primary, the report job, nearly done"),
]


def test_in_a_small_group_a_statement_sharing_enough_words_takes_the_thread_up() -> None:
    later = msg("d4", "kai", 180, "told the report team, the big update moves to 2am")
    groups = [["d1", "d2", "d3"], ["f1", "f2"], ["d4"]]
    assert resumed([*DELAY, *FLOUR, later], groups) == [["d1", "d2", "d3", "d4"], ["f1", "f2"]]
    # One shared word is too little: "update" alone could be anyone's.
    once = msg("d4", "kai", 180, "any update on the lunch order?".replace("?", "."))
    assert ["d4"] in resumed([*DELAY, *FLOUR, once], groups)


def test_in_a_busy_channel_the_same_statement_is_a_new_thread() -> None:
    people, window = SETTINGS.small_group
    # With bot, wu and kai, one more person than a small group holds.
    crowd = [msg(f"b{n}", f"user{n}", 20 + n, f"line {n} about something else") for n in range(people - 2)]
    later = msg("d4", "kai", 180, "told the report team, the big update moves to 2am")
    groups = [["d1", "d2", "d3"], *[[m.id] for m in crowd], ["d4"]]
    assert ["d4"] in resumed([*DELAY, *crowd, later], groups)
    # The size is a setting: the same channel counts as small when the limit allows it.
    wide = ThreadSettings(small_group=(people + 4, window))
    merged, _ = resume_paused([*DELAY, *crowd, later], groups, {}, wide)
    assert ["d1", "d2", "d3", "d4"] in merged


RENT = [msg("r1", "priya", 0, "my rent went out twice this month??")]


def test_the_next_line_after_a_question_nobody_took_up_answers_it_however_late() -> None:
    answer = msg("r2", "dana", 70, "sorry Priya, the standing order ran twice, we've refunded it")
    assert resumed([*RENT, answer], [["r1"], ["r2"]]) == [["r1", "r2"]]
    # A clarifying question to the asker takes it up too: 「你什么版本」 40 minutes after the report.
    report = [msg("v1", "zhang", 0, "点图标没反应")]
    assert resumed([*report, msg("v2", "staff", 40, "你什么版本")], [["v1"], ["v2"]]) == [["v1", "v2"]]


def test_a_new_question_or_a_line_after_others_spoke_does_not_take_it_up() -> None:
    asked = msg("r2", "sam", 70, "does anyone know a good plumber?")
    assert ["r2"] in resumed([*RENT, asked], [["r1"], ["r2"]])
    between = msg("x1", "mei", 30, "bins go out tonight")
    answer = msg("r2", "dana", 70, "sorry Priya, the standing order ran twice, we've refunded it")
    assert ["r2"] in resumed([*RENT, between, answer], [["r1"], ["x1"], ["r2"]])
    # Once someone answered, the question is no longer waiting for the next line.
    replied = [*RENT, msg("r1b", "sam", 5, "mine too")]
    assert ["r2"] in resumed([*replied, answer], [["r1", "r1b"], ["r2"]])


def test_a_confirmation_as_the_next_line_takes_the_thread_up_without_a_shared_word() -> None:
    wifi = [
        msg("w1", "priya", 0, "wifi keeps dropping on the top floor"),
        msg("w2", "lucas", 20, "moved the extender from the hallway socket up to the landing, try now"),
    ]
    better = msg("w3", "priya", 60, "much better, full bars in my room")
    assert resumed([*wifi, better], [["w1", "w2"], ["w3"]]) == [["w1", "w2", "w3"]]
    # Someone who was not in the thread confirms something else.
    other = msg("w3", "sam", 60, "much better, full bars in my room")
    assert ["w3"] in resumed([*wifi, other], [["w1", "w2"], ["w3"]])


def test_a_clarifying_question_takes_up_the_report_just_before_it() -> None:
    # 「一直报」 (an alarm that keeps going off) is a report; staff's polite 「您好 麻烦看下…」 asks its author.
    messages = [
        msg("a1", "a", 0, "昨晚升级完固件 机器一直报主刷缠绕 根本没东西缠着"),
        msg("a2", "a", 0.2, "清了三遍了"),
        msg("k1", "kf", 1, "您好 麻烦看下app里固件版本是多少"),
    ]
    assert resumed(messages, [["a1", "a2"], ["k1"]]) == [["a1", "a2", "k1"]]
    # After a greeting, which reports nothing, the same question is no answer to it.
    messages[0] = msg("a1", "a", 0, "大家早上好")
    messages[1] = msg("a2", "a", 0.2, "[表情]")
    assert ["k1"] in resumed(messages, [["a1", "a2"], ["k1"]])
