"""Small-group signals: cues, speaker and role features, and the learned model on hand-written chats."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from threadkeep.model import Message
from threadkeep.threads import features as F
from threadkeep.threads import reconstruct
from threadkeep.threads.cues import asks, confirms_fix, is_ack, is_confirmation, is_report, is_wait, promises
from threadkeep.threads.learned import (
    addressee_latest,
    assign_learned,
    decode,
    fresh_questions,
    prepare_conversation,
    structure_of,
)
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings

START = datetime(2026, 5, 14, 10, 0, tzinfo=timezone(timedelta(hours=8)))
SETTINGS = ThreadSettings()


def msg(mid: str, sender: str, minute: float, text: str, **extra) -> Message:
    return Message(mid, "c", sender, START + timedelta(minutes=minute), text, **extra)


def assign(messages: list[Message]) -> list[list[str]]:
    return assign_learned(messages, NameIndex(messages), SETTINGS)[0]


def thread_of(threads: list[list[str]], message_id: str) -> list[str]:
    return next(thread for thread in threads if message_id in thread)


def feature(messages: list[Message], name: str, index: int, candidate: int) -> float:
    """Feature `name` of message `index` against the earlier message `candidate` (itself for the self-link)."""
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    slot = list(prepared.candidates[index]).index(candidate)
    return float(prepared.static[index, slot, F.STATIC.index(name)])


# ----------------------------------------------------------------------------- cues


@pytest.mark.parametrize("text", ["你什么版本", "安卓还是苹果", "哪个版本的", "which version?", "是不是网络问题"])
def test_clarifying_questions_ask(text: str) -> None:
    assert asks(text)


@pytest.mark.parametrize("text", ["3.1.4", "我看看", "点图标没反应", "restarted it twice"])
def test_statements_do_not_ask(text: str) -> None:
    assert not asks(text)


@pytest.mark.parametrize("text", ["我看看", "收到，我找研发看下，稍等", "稍等", "let me check", "one sec, looking"])
def test_wait_cues(text: str) -> None:
    assert is_wait(text)


@pytest.mark.parametrize(
    "text",
    ["我也好了", "可以了 谢谢", "hot water is back 👍", "works now, thanks", "fixed it", "much better, full bars"],
)
def test_confirmations(text: str) -> None:
    assert is_confirmation(text)


@pytest.mark.parametrize(
    "text", ["还是不行", "is it working for you?", "点图标没反应", "the fix is in 3.2", "not good now", "fine now?"]
)
def test_not_confirmations(text: str) -> None:
    assert not is_confirmation(text)


@pytest.mark.parametrize("text", ["加上了，CI 全绿", "#231 已合，main 干净了", "升级以后没再出现", "好多了"])
def test_chinese_confirmations_of_a_fix(text: str) -> None:
    assert is_confirmation(text)


@pytest.mark.parametrize("text", ["今天就没有车了", "还是没反应", "绿色那个按钮在哪"])
def test_chinese_lines_that_confirm_nothing(text: str) -> None:
    assert not is_confirmation(text)


def test_a_fix_told_with_fine_now_confirms_it() -> None:
    assert confirms_fix("cleared it, found two hair clips lol. drains fine now")
    assert not confirms_fix("it isn't fine now, still full of water")


@pytest.mark.parametrize(
    "text",
    [
        "wifi keeps dropping on the top floor",
        "washing machine stops halfway with water still in it",
        "no hot water this morning, boiler says F22 again",
        "the sink won't drain",
        "点图标没反应",
        "昨晚升级完固件 机器一直报主刷缠绕",
        "热水器没热水了 屏幕上显示E3",
        "楼道里灯坏了两天了",
        "the staging server is down again",
        "checkout keeps showing error 502",
    ],
)
def test_reports(text: str) -> None:
    assert is_report(text)


@pytest.mark.parametrize(
    "text", ["keeps going", "no worries", "the kitchen tap is working again", "3.1.4 的图标缓存有问题，清一下缓存就行"]
)
def test_not_reports(text: str) -> None:
    assert not is_report(text)


@pytest.mark.parametrize(
    "text", ["行 我晚点挪回去试试", "好 我跟他们说", "好 两点过去拿", "I'll do it tonight and split it", "ok will do"]
)
def test_promises_of_a_later_step(text: str) -> None:
    assert promises(text)


@pytest.mark.parametrize(
    "text", ["周六下午2-5点 订了3号4号场 接龙", "bins go out tonight btw", "will it rain later?", "我下午在家吗"]
)
def test_plans_and_questions_are_no_promises(text: str) -> None:
    assert not promises(text)


def test_acknowledgements() -> None:
    assert is_ack("收到") and is_ack("好的谢谢") and is_ack("ok thanks 👍")
    assert not is_ack("好的 我明天把日志发你") and not is_ack("ok so the problem is the cache")


@pytest.mark.parametrize(
    "text",
    [
        "谢谢陈师傅",
        "谢谢大家[抱拳]",
        "好的 谢谢两位",
        "收到了",
        "明白了 谢谢",
        "原来如此",
        "辛苦孟师傅",
        "thanks Mick",
        "ty both 🙏",
        "ok thank you Priya!!",
        "cheers",
        "lifesaver, thank you!!",
    ],
)
def test_a_thanks_naming_whom_it_thanks_is_an_acknowledgement(text: str) -> None:
    assert is_ack(text)


@pytest.mark.parametrize(
    "text",
    [
        "谢谢 我明天再试试",
        "谢谢陈师傅专门跑一趟 水不滴了",
        "thanks Mick, I'll bring it Monday",
        "thanks for the help",
        "[图片]",
    ],
)
def test_a_thanks_that_goes_on_is_not_only_an_acknowledgement(text: str) -> None:
    assert not is_ack(text)


@pytest.mark.parametrize("text", ["that worked", "found it, thanks", "loads now 🙃", "we're in 👍", "找到了 谢谢周姐"])
def test_it_works_said_otherwise_confirms(text: str) -> None:
    assert is_confirmation(text)


@pytest.mark.parametrize("text", ["did that work?", "found it?", "找到了吗"])
def test_asking_whether_it_works_confirms_nothing(text: str) -> None:
    assert not is_confirmation(text)


# ----------------------------------------------------------------------------- features


def test_speakers_between_counts_the_people_in_a_stretch() -> None:
    messages = [
        msg("1", "ann", 0, "the printer is offline again"),
        msg("2", "bob", 1, "which floor?"),
        msg("3", "ann", 2, "third"),
        msg("4", "cat", 3, "lunch anyone"),
        msg("5", "bob", 4, "restarting it now"),
    ]
    assert feature(messages, "speakers_between", 2, 1) == 2  # ann and bob only: a two-person stretch
    assert feature(messages, "speakers_between", 4, 2) == 3  # cat spoke in between
    assert feature(messages, "recent_speakers", 4, 4) == 3
    assert feature(messages, "window_speakers", 4, 4) == 3


def test_a_busy_channel_and_a_small_chat_differ_in_window_speakers() -> None:
    busy = [msg(f"b{k}", f"user{k % 30}", k * 0.2, f"line {k}") for k in range(120)]
    small = [msg(f"s{k}", ("ann", "bob", "cat")[k % 3], k * 0.2, f"line {k}") for k in range(120)]
    assert feature(busy, "window_speakers", 119, 119) == 30
    assert feature(small, "window_speakers", 119, 119) == 3
    assert feature(busy, "log_recent_messages", 119, 119) > feature(small[:5], "log_recent_messages", 4, 4)


def test_answerer_role_marks_who_answers_other_peoples_questions() -> None:
    messages = []
    for k in range(4):
        messages += [
            msg(f"q{k}", f"user{k}", 10 * k, "同步一直失败怎么办？"),
            msg(f"a{k}", "staff", 10 * k + 1, "设置里清一下缓存再试"),
        ]
    last = len(messages) - 1
    assert feature(messages, "i_answerer", last, last) > 0.6
    assert feature(messages, "j_answerer", last, last - 1) < 0.25
    assert feature(messages, "j_asker", last, last - 1) > 0.4


def test_open_and_latest_question_features() -> None:
    messages = [
        msg("1", "ann", 0, "does the vpn work for anyone?"),
        msg("2", "ann", 1, "since this morning it drops"),
        msg("3", "bob", 2, "mine is fine"),
        msg("4", "cat", 3, "same for me"),
    ]
    assert feature(messages, "j_open_question", 2, 0) == 1  # bob is the first to answer ann
    assert feature(messages, "j_open_question", 3, 0) == 0  # bob spoke in between
    assert feature(messages, "j_latest_question", 3, 0) == 1
    assert feature(messages, "j_last_other", 2, 1) == 1


def test_a_message_after_its_speakers_wait_cue() -> None:
    messages = [
        msg("1", "zhang", 0, "点图标没反应"),
        msg("2", "staff", 1, "我看看"),
        msg("3", "li", 5, "今天下午开会吗"),
        msg("4", "staff", 26, "@zhang 找到了，是缓存的问题"),
    ]
    assert feature(messages, "i_after_own_wait", 3, 3) == 1
    assert feature(messages, "j_wait", 3, 1) == 1
    assert feature(messages, "i_after_own_wait", 2, 2) == 0


def test_a_promise_its_report_back_a_new_report_and_a_question_to_the_group() -> None:
    messages = [
        msg("1", "zhang", 0, "路由器连不上网了"),
        msg("2", "staff", 1, "重启一下试试"),
        msg("3", "zhang", 2, "好 我晚点回家试试"),
        msg("4", "li", 30, "有人知道物业电话吗"),
        msg("5", "zhang", 90, "重启完绿灯了"),
    ]
    assert feature(messages, "i_report", 0, 0) == 1 and feature(messages, "i_report", 4, 4) == 0
    assert feature(messages, "j_promise", 4, 2) == 1 and feature(messages, "j_promise", 4, 1) == 0
    assert feature(messages, "i_after_own_promise", 4, 4) == 1
    assert feature(messages, "i_after_own_promise", 3, 3) == 0
    assert feature(messages, "i_opens_topic", 3, 3) == 1 and feature(messages, "i_opens_topic", 1, 1) == 0


PROMISE_THEN_NEW_PROBLEM = {
    "zh": [
        msg("1", "cust", 0, "3栋601 厨房水槽下面的水管漏水了"),
        msg("2", "staff", 1, "收到，我下午过去看看"),
        msg("3", "li", 5, "今天地下停车场开放吗"),
        msg("4", "wang", 6, "开放的，B2 在刷漆"),
        msg("5", "staff", 80, "601是软管老化裂了，换了一根新的，已经不漏了"),
        msg("6", "cust2", 86, "8栋302 客厅插座一插电器就跳闸"),
    ],
    "en": [
        msg("1", "ann", 0, "my bike's rear brake is squealing like mad, can I book a service?"),
        msg("2", "gav", 1, "sure, drop it off, I'll look at it this afternoon"),
        msg("3", "tom", 4, "do you stock 700x28 tubes?"),
        msg("4", "pri", 5, "yep, presta and schrader"),
        msg("5", "gav", 75, "pads were contaminated, replaced them and bled the brake, ready to collect"),
        msg("6", "dev", 82, "my chain keeps skipping on the big cog, is that the cassette?"),
    ],
}


@pytest.mark.parametrize("language", sorted(PROMISE_THEN_NEW_PROBLEM))
def test_a_result_after_a_promise_joins_and_a_new_problem_after_it_does_not(language: str) -> None:
    threads = [list(thread.message_ids) for thread in reconstruct(PROMISE_THEN_NEW_PROBLEM[language], SETTINGS)]
    assert thread_of(threads, "5") == ["1", "2", "5"]
    assert thread_of(threads, "6") == ["6"]


# ----------------------------------------------------------------------------- the model on small chats


@pytest.mark.parametrize(
    "report",
    [
        "sync stops after the laptop wakes from sleep",
        "sync stops when the laptop wakes from sleep",
        "sync stops after the laptop wakes from hibernation",
    ],
)
def test_a_report_the_fix_two_minutes_later_and_the_thanks_are_one_thread(report: str) -> None:
    """Two people, three lines: however the report is worded, the fix is not cut from the line it fixes."""
    messages = [
        msg("1", "ann", 0, report),
        msg("2", "bob", 2, "turn off power saving for the network adapter in device manager"),
        msg("3", "ann", 4, "that fixed it, thanks"),
    ]
    assert assign(messages) == [["1", "2", "3"]]


def test_report_clarification_wait_and_late_conclusion_are_one_thread() -> None:
    messages = [
        msg("1", "zhang", 0, "点图标没反应"),
        msg("2", "staff", 1, "你什么版本"),
        msg("3", "zhang", 2, "3.1.4"),
        msg("4", "staff", 2.5, "我看看"),
        msg("5", "wang", 6, "今天下午的培训还开吗"),
        msg("6", "li", 7, "开的 三点"),
        msg("7", "staff", 27.5, "@zhang 找到了，3.1.4 的托盘进程有问题，升级到 3.1.5 就好"),
        msg("8", "zhang", 30, "好了 谢谢"),
    ]
    names = NameIndex(messages)
    threads = assign_learned(messages, names, SETTINGS)[0]
    assert thread_of(threads, "1") == ["1", "2", "3", "4", "7", "8"]
    assert thread_of(threads, "5") == ["5", "6"]


def test_acknowledgement_and_confirmation_join_the_staff_thread() -> None:
    messages = [
        msg("1", "chen", 0, "导出的表格打不开，提示文件损坏"),
        msg("2", "staff", 2, "收到，我找研发看下，稍等"),
        msg("3", "staff", 20, "@chen 研发说是 2.3 的导出 bug，已经修了，更新一下再导出"),
        msg("4", "chen", 24, "可以了"),
        msg("5", "liu", 25, "我也好了"),
    ]
    threads = assign(messages)
    assert thread_of(threads, "1") == ["1", "2", "3", "4", "5"]


def test_an_english_question_and_its_answer_three_minutes_later_are_joined() -> None:
    messages = [
        msg("1", "mum", 0, "is the boiler still making that noise?"),
        msg("2", "dad", 3, "yes, I turned it off and called the plumber"),
        msg("3", "mum", 4, "ok"),
    ]
    threads = assign(messages)
    assert len(threads) == 1


def test_a_confirmation_joins_the_fix_it_confirms() -> None:
    messages = [
        msg("1", "ann", 0, "no hot water upstairs since this morning"),
        msg("2", "tom", 2, "the boiler pressure was low, I topped it up"),
        msg("3", "sam", 3, "anyone seen my blue umbrella?"),
        msg("4", "ann", 6, "hot water is back 👍"),
    ]
    threads = assign(messages)
    assert thread_of(threads, "4") == ["1", "2", "4"]


def test_addressee_latest_is_the_latest_message_of_the_person_addressed() -> None:
    messages = [
        msg("1", "ann", 0, "sync conflict on every note"),
        msg("2", "bob", 1, "same here"),
        msg("3", "ann", 2, "macOS 14"),
        msg("4", "dev", 3, "vim keybindings are on the roadmap"),
        msg("5", "dev", 9, "@ann @bob found it, update to 2.8.1", mentions=("ann", "bob")),
        msg("6", "carl", 10, "thanks"),
    ]
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    assert addressee_latest(prepared) == [-1, -1, -1, -1, 2, -1]


def test_an_addressed_answer_joins_the_addressees_thread_not_the_staff_members_last_one() -> None:
    messages = [
        msg("1", "jk", 0, "anyone else getting sync conflict on every note since the update?"),
        msg("2", "sunny", 1, "yep, since this morning"),
        msg("3", "mod", 3, "Thanks for reporting. Which platform are you on?"),
        msg("4", "jk", 3.5, "macOS 14"),
        msg("5", "mod", 4, "ok, let me check with the team"),
        msg("6", "emma", 12, "feature request: vim keybindings please"),
        msg("7", "dev", 14, "it's on the roadmap for Q3, upvote it on the board"),
        msg("8", "emma", 15, "upvoted 👍"),
        msg("9", "dev", 23, "@jk @sunny found it: timestamps compared in local time, 2.8.1 fixes it"),
    ]
    threads = assign(messages)
    assert "9" in thread_of(threads, "1") and "9" not in thread_of(threads, "6")


def decode_with(messages: list[Message], prefer: dict[int, int], **rules) -> list[int]:
    """Parents decoded from scores that make each message `i` of `prefer` pick message `prefer[i]`
    (-1: the self-link) and every other message its previous one."""
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    candidates = prepared.candidates
    slots = np.where(candidates >= 0, np.arange(candidates.shape[1])[None, :], -1)
    scores = np.where(candidates >= 0, 0.0, -np.inf)
    for index in range(len(messages)):
        wanted = prefer.get(index, index - 1 if index else -1)
        scores[index, 0] = 0.5
        if wanted >= 0:
            scores[index, list(candidates[index]).index(wanted)] = 1.0
    quoted = [-1] * len(messages)
    return decode(prepared, quoted, slots, scores, SETTINGS, **rules)


SETTLED = {
    "zh": (
        "点图标打不开 一点反应都没有",
        "@ana 升级到 3.2.1 就行",
        "装了 3.2.1 好了",
        "谢谢小云",
        "又打不开了",
        "安装 3.2.1 报 0x80070005",
    ),
    "en": (
        "the app crashes on start since the update",
        "@ana install 2.8.1, that fixes it",
        "installed 2.8.1, works now",
        "thanks Kim",
        "it crashes again",
        "installing 2.8.1 fails with 0x80070005",
    ),
}


@pytest.mark.parametrize("language", SETTLED)
def test_a_new_report_after_its_look_alike_was_confirmed_fixed_starts_a_thread(language: str) -> None:
    report, fix, confirmed, thanks, again, other = SETTLED[language]
    settled = [
        msg("1", "ana", 0, report),
        msg("2", "kim", 2, fix, mentions=("ana",)),
        msg("3", "ana", 15, confirmed),
        msg("4", "ana", 15.5, thanks),
        msg("5", "ben", 22, other),
    ]
    # Had the starter raised the problem again, it would not be settled: a look-alike may be the same.
    reopened = [*settled[:4], msg("4b", "ana", 18, again), msg("5", "ben", 22, other)]
    for messages, starts in ((settled, True), (reopened, False)):
        prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
        structure = structure_of(prepared, SETTINGS)
        last = len(messages) - 1
        prefer = {last: last - 1}  # the scores put ben's report under ana's last line: the words are the same
        assert decode_with(messages, prefer)[last] == last - 1
        assert (decode_with(messages, prefer, structure=structure)[last] == -1) is starts


def test_an_addressed_message_moves_to_the_addressees_open_thread() -> None:
    messages = [
        msg("1", "lily", 0, "会员被扣了两次钱"),
        msg("2", "staff", 1, "收到，我找财务看下，稍等"),
        msg("3", "ad", 5, "招聘刷单兼职 日结300"),
        msg("4", "staff", 6, "本群禁止发广告"),
        msg("5", "staff", 20, "@lily 查到了，已原路退回", mentions=("lily",)),
    ]
    prefer = {2: -1, 4: 3}  # the scores pick the staff member's own latest message, in the ad thread
    assert decode_with(messages, prefer)[4] == 3
    assert (
        decode_with(
            messages, prefer, addressed=addressee_latest(prepare_conversation(messages, NameIndex(messages), SETTINGS))
        )[4]
        == 0
    )


def test_an_addressed_message_stays_when_the_addressee_is_in_the_chosen_thread() -> None:
    messages = [
        msg("1", "lily", 0, "会员被扣了两次钱"),
        msg("2", "staff", 1, "订单号多少"),
        msg("3", "lily", 2, "2026051901"),
        msg("4", "staff", 3, "@lily 收到", mentions=("lily",)),
    ]
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    assert decode_with(messages, {3: 1}, addressed=addressee_latest(prepared))[3] == 1


def test_a_question_to_nobody_stays_out_of_a_conversation_between_others() -> None:
    messages = [
        msg("1", "a", 0, "我的账本同步不了"),
        msg("2", "staff", 1, "升级到3.1.5就好"),
        msg("3", "b", 3, "周末有人值班吗？"),
    ]
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    assert decode_with(messages, {})[2] == 1
    assert decode_with(messages, {}, fresh=fresh_questions(prepared))[2] == -1


def test_a_clarifying_question_right_after_a_report_still_joins_it() -> None:
    messages = [msg("1", "zhang", 0, "点图标没反应"), msg("2", "staff", 1, "你什么版本")]
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    assert decode_with(messages, {}, fresh=fresh_questions(prepared))[1] == 0


def test_a_question_sharing_words_with_the_conversation_joins_it() -> None:
    messages = [
        msg("1", "a", 0, "我的账本同步不了"),
        msg("2", "staff", 1, "升级到3.1.5就好"),
        msg("3", "b", 3, "账本同步不了是不是也要升级？"),
    ]
    prepared = prepare_conversation(messages, NameIndex(messages), SETTINGS)
    assert decode_with(messages, {}, fresh=fresh_questions(prepared))[2] == 1


def test_a_me_too_joins_the_report_it_shares_most_words_with() -> None:
    messages = [
        msg("1", "ann", 0, "同步一直报 E1024 文件名里没有特殊符号"),
        msg("2", "bob", 1, "点了图标没反应"),
        msg("3", "xi", 2, "@bob 什么版本", mentions=("bob",)),
        msg("4", "bob", 3, "3.2.0 没反应"),
        msg("5", "carl", 4, "我也老报 E1024 文件名也没有特殊符号 没反应"),
    ]
    threads = assign(messages)
    assert thread_of(threads, "5") == ["1", "5"]
