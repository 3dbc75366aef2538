"""The small-group decoding rules of `threads/learned.py` (`small_group_choice`), one case each.

The scores are set by hand so that every message's scored choice is known: each test states
which parent the scores pick, and checks what decoding makes of it with and without the
rules, so that a rule that stopped firing (or fired where its guard says not to) fails here.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from scored_decoding import decode_picks

from threadkeep.model import Message
from threadkeep.threads import learned as L
from threadkeep.threads.cues import is_report
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings

START = datetime(2026, 9, 14, 19, 0, tzinfo=timezone(timedelta(hours=8)))
SETTINGS = ThreadSettings()


def msg(mid: str, sender: str, minute: float, text: str, **extra) -> Message:
    return Message(mid, "c", sender, START + timedelta(minutes=minute), text, **extra)


def decode(messages: list[Message], picks: dict[str, str | None], rules: bool = True) -> dict[str, str | None]:
    return decode_picks(messages, picks, small_group_rules=rules)


# Staff asks a first user for details and goes to look (「我看看」); others talk meanwhile.
WAITING = [
    msg("r1", "zhang", 0, "早上打开记账 一直转圈同步失败"),
    msg("r2", "staff", 1, "你什么版本"),
    msg("r3", "zhang", 1.5, "3.1.4"),
    msg("r4", "staff", 2, "我看看"),
    msg("o1", "yu", 4, "请问怎么把账单导出成excel啊"),
    msg("o2", "wang", 5, "我的-设置-数据导出 里面有"),
    msg("o3", "yu", 6, "谢谢大哥"),
]
STARTS = {"r1": None, "o1": None}


def test_a_statement_after_the_speakers_own_wait_concludes_it() -> None:
    messages = [*WAITING, msg("c", "staff", 25, "原因是昨晚服务器证书更新，升级到新版就行")]
    picks = {**STARTS, "c": None}  # the scores would start a thread with the conclusion
    assert decode(messages, picks, rules=False)["c"] is None
    assert decode(messages, picks)["c"] == "r4"


def test_a_question_after_a_wait_is_a_new_topic() -> None:
    messages = [*WAITING, msg("c", "staff", 25, "周末谁值班，有人知道吗？")]
    assert decode(messages, {**STARTS, "c": None})["c"] is None


def test_a_wait_whose_thread_went_idle_is_not_concluded() -> None:
    late = 2 + SETTINGS.idle.total_seconds() / 60 + 5
    messages = [*WAITING[:4], msg("c", "staff", late, "原因是昨晚服务器证书更新，升级到新版就行")]
    assert decode(messages, {"r1": None, "c": None})["c"] is None


def test_an_answer_to_an_unanswered_question_takes_it_up_not_the_speakers_paused_thread() -> None:
    messages = [
        *WAITING[:4],
        msg("d1", "kao", 8, "作业提交截止时间是几号"),
        msg("d2", "staff", 9.5, "每周日晚12点"),
    ]
    picks = {"r1": None, "d1": None, "d2": "r4"}  # the scores follow staff's own 「我看看」
    assert decode(messages, picks, rules=False)["d2"] == "r4"
    assert decode(messages, picks)["d2"] == "d1"


def test_a_clarifying_question_about_an_unanswered_report_takes_it_up() -> None:
    messages = [
        *WAITING[:4],
        msg("e1", "wang", 8, "小组件在桌面上不显示数字了"),
        msg("e2", "staff", 8.5, "安卓还是苹果"),
    ]
    picks = {"r1": None, "e1": None, "e2": "r4"}
    assert decode(messages, picks)["e2"] == "e1"


def test_a_statement_after_a_statement_is_no_pair() -> None:
    # A report followed by staff's statement: nothing says the statement answers the report.
    messages = [
        *WAITING[:4],
        msg("e1", "wang", 8, "小组件在桌面上不显示数字了"),
        msg("e2", "staff", 8.5, "大家稍后更新一下"),
    ]
    assert decode(messages, {"r1": None, "e1": None, "e2": "r4"})["e2"] == "r4"


def test_a_thread_another_person_closed_is_not_left_for_a_new_question() -> None:
    # An open channel: someone else's 「:)」 ends the chosen exchange, so this speaker is
    # likely still in it (Ubuntu IRC dev: moving such a line to the next question was wrong).
    messages = [
        msg("p1", "eep", 0, "i wonder if pcsx2 runs in wine"),
        msg("p2", "cool", 0.5, "never tried that"),
        msg("p3", "cool", 0.6, ":)"),
        msg("q1", "carp", 1, "how do I set up my laptop as a wireless router?"),
        msg("p4", "eep", 1.2, "it would be funny to try, if only to see how horrible it would perform"),
    ]
    assert decode(messages, {"p1": None, "q1": None, "p4": "p3"})["p4"] == "p3"


def test_a_shared_word_keeps_the_scored_choice() -> None:
    messages = [
        *WAITING[:4],
        msg("d1", "kao", 8, "作业提交截止时间是几号"),
        msg("d2", "staff", 9.5, "3.1.4 的同步问题还在查"),  # shares 3.1.4 with the paused thread
    ]
    assert decode(messages, {"r1": None, "d1": None, "d2": "r4"})["d2"] == "r4"


def test_an_addressed_message_is_left_to_the_addressee_rules() -> None:
    messages = [
        *WAITING,
        msg("d1", "kao", 8, "作业提交截止时间是几号"),
        msg("d2", "staff", 9.5, "@yu 每周日晚12点", mentions=("yu",)),
    ]
    picks = {**STARTS, "d1": None, "d2": "r4"}
    assert decode(messages, {**picks, "d2": "r4"})["d2"] == "r4"
    unaddressed = [*messages[:-1], msg("d2", "staff", 9.5, "每周日晚12点")]
    assert decode(unaddressed, picks)["d2"] == "d1"


def test_a_me_too_joins_the_report_it_names() -> None:
    messages = [
        msg("m1", "zhang", 0, "早上打开记账 一直转圈同步失败"),
        msg("m2", "yu", 2, "请问怎么把账单导出成excel啊"),
        msg("m3", "wang", 3, "我的-设置-数据导出 里面有"),
        msg("m4", "chen", 5, "+1 我也一直转圈"),
    ]
    picks = {"m1": None, "m2": None, "m4": "m3"}  # the scores follow the exchange just before
    assert decode(messages, picks, rules=False)["m4"] == "m3"
    assert decode(messages, picks)["m4"] == "m1"


def test_a_me_too_naming_nothing_stays_where_the_scores_put_it() -> None:
    messages = [
        msg("m1", "zhang", 0, "早上打开记账 一直转圈同步失败"),
        msg("m2", "yu", 2, "请问怎么把账单导出成excel啊"),
        msg("m3", "wang", 3, "我的-设置-数据导出 里面有"),
        msg("m4", "chen", 5, "+1"),
    ]
    assert decode(messages, {"m1": None, "m2": None, "m4": "m3"})["m4"] == "m3"


def test_the_packaged_model_applies_the_rules() -> None:
    assert L.reply_model().small_groups


def test_a_confirmation_is_no_orphan() -> None:
    messages = [
        msg("h1", "mum", 0, "No hot water again this morning"),
        msg("h2", "dad", 1.5, "Open the filling loop under the boiler till it reads 1.2"),
        msg("p1", "ada", 2, "Can someone pick me up from practice at 5?"),
        msg("p2", "tobi", 3, "I can, I finish at 4:30"),
        msg("h3", "mum", 9, "done, it works now 👍"),
    ]
    picks = {"h1": None, "p1": None, "h3": None}  # the scores would start a thread with it
    assert decode(messages, picks, rules=False)["h3"] is None
    assert decode(messages, picks)["h3"] == "h2"


def test_an_answer_after_a_pause_takes_up_the_unanswered_question() -> None:
    messages = [
        msg("k1", "tom", 0, "bins go out tonight btw"),
        msg("q1", "priya", 10, "did anyone pay the electricity bill this month"),
        msg("a1", "ana", 13, "not yet, it is due on friday"),
    ]
    picks = {"k1": None, "q1": None, "a1": None}
    assert decode(messages, picks, rules=False)["a1"] is None
    assert decode(messages, picks)["a1"] == "q1"
    # Typed within the same utterance gap, a line is more often someone's other conversation.
    quick = [*messages[:2], msg("a1", "ana", 10.5, "not yet, it is due on friday")]
    assert decode(quick, picks)["a1"] is None
    # A question after a question is no answer to it.
    asking = [*messages[:2], msg("a1", "ana", 13, "who is cooking tonight?")]
    assert decode(asking, picks)["a1"] is None


def test_a_new_report_by_someone_outside_the_chosen_thread_starts_one() -> None:
    messages = [
        msg("g1", "zhou", 0, "大家早啊"),
        msg("g2", "lily", 0.5, "早"),
        msg("r1", "wang", 3, "小组件在桌面上不显示数字了"),
    ]
    picks = {"g1": None, "r1": "g2"}  # the scores join the report to the greetings
    assert decode(messages, picks, rules=False)["r1"] == "g2"
    assert decode(messages, picks)["r1"] is None


def test_a_report_right_after_someones_question_may_be_its_answer() -> None:
    messages = [
        msg("q1", "zhao", 0, "群晖 NAS 映射的网络驱动器 能当同步目录吗"),
        msg("a1", "kk", 1.5, "应该不行吧 我试过报错"),
    ]
    assert decode(messages, {"q1": None, "a1": "q1"})["a1"] == "q1"


def test_a_report_in_the_speakers_own_thread_stays() -> None:
    messages = [
        msg("r1", "wang", 0, "小组件在桌面上不显示数字了"),
        msg("s1", "staff", 1, "删掉小组件重新添加一次试试"),
        msg("r2", "wang", 3, "还是不行 还是空白"),
    ]
    assert decode(messages, {"r1": None, "r2": "s1"})["r2"] == "s1"


def test_report_cue() -> None:
    for text in (
        "充值没到账 付了68",
        "邮件里补偿领不了 点了没反应",
        "我这边点了图标一点反应都没有",
        "the app crashes when I open a big note",
        "sync doesn't work",
    ):
        assert is_report(text), text
    for text in ("每周日晚12点", "我的-设置-数据导出 里面有", "it works now", "升级了 好了", "thanks, that fixed it"):
        assert not is_report(text), text


# A player's question answered and closed with their own 「ok」; other players talk meanwhile.
CLOSED = [
    msg("g1", "pai", 0, "公会战匹配不到人咋回事"),
    msg("g2", "gm", 1, "也是服务器维护影响的，维护完就正常"),
    msg("g3", "pai", 1.5, "ok"),
    msg("o1", "fei", 3, "有没有大佬带一下副本"),
    msg("o2", "mu", 3.5, "我来 房间号多少"),
]


def test_a_question_long_after_ones_own_ok_is_a_new_topic() -> None:
    messages = [*CLOSED, msg("n1", "pai", 20, "周年庆皮肤什么时候返场")]
    picks = {"g1": None, "o1": None, "n1": "g3"}  # the scores join it to the speaker's own 「ok」
    assert decode(messages, picks, rules=False)["n1"] == "g3"
    assert decode(messages, picks)["n1"] is None


def test_a_question_right_after_ones_own_ok_follows_it_up() -> None:
    # Within `reopen_gap` it is a follow-up of the exchange just closed.
    soon = 1.5 + SETTINGS.reopen_gap.total_seconds() / 60 - 0.25
    messages = [*CLOSED[:3], msg("n1", "pai", soon, "那维护要多久？")]
    assert decode(messages, {"g1": None, "n1": "g3"})["n1"] == "g3"


def test_a_question_sharing_a_word_with_the_closed_exchange_stays_in_it() -> None:
    messages = [*CLOSED, msg("n1", "pai", 20, "公会战什么时候恢复")]
    assert decode(messages, {"g1": None, "o1": None, "n1": "g3"})["n1"] == "g3"


def test_a_question_after_someone_elses_ok_is_not_moved_by_this_rule() -> None:
    messages = [*CLOSED, msg("n1", "mu", 20, "周年庆皮肤什么时候返场")]
    assert decode(messages, {"g1": None, "o1": None, "n1": "g3"})["n1"] == "g3"


# A student asks; the TA answers; another student's exchange ends in their thanks.
ASKED = [
    msg("d1", "kao", 0, "作业提交截止时间是几号"),
    msg("d2", "ta", 1.5, "每周日晚12点"),
    msg("w1", "miao", 3, "讲义第三章的pdf打不开"),
    msg("w2", "ta", 4, "手机端要先下载到本地再用wps打开"),
    msg("w3", "miao", 5, "下载了 可以看了 谢谢"),
]


def test_an_askers_ack_thanks_the_answer_to_their_question() -> None:
    messages = [*ASKED, msg("k", "kao", 6, "收到")]
    picks = {"d1": None, "w1": None, "k": "w3"}  # the scores follow the other student's thanks
    assert decode(messages, picks, rules=False)["k"] == "w3"
    assert decode(messages, picks)["k"] == "d2"


def test_an_ack_by_someone_who_did_not_ask_stays() -> None:
    # kao's last message is a statement: nothing says which answer the 「收到」 takes.
    told = [msg("d1", "kao", 0, "我明天交作业"), *ASKED[1:], msg("k", "kao", 6, "收到")]
    assert decode(told, {"d1": None, "w1": None, "k": "w3"})["k"] == "w3"


def test_an_ack_to_a_question_is_an_answer_and_stays() -> None:
    messages = [*ASKED[:4], msg("w3", "miao", 5, "电脑上能打开吗？"), msg("k", "kao", 6, "收到")]
    assert decode(messages, {"d1": None, "w1": None, "k": "w3"})["k"] == "w3"


# Players report an outage; another player asks about tonight's event meanwhile.
OUTAGE = [
    msg("u1", "ye", 0, "更新完进不去了 卡在98%"),
    msg("u2", "yu", 0.3, "我也是卡98"),
    msg("q1", "fei", 1, "今晚活动几点开"),
]


def test_a_wait_answers_the_open_report() -> None:
    messages = [*OUTAGE, msg("w", "gm", 1.5, "各位稍等，我们在排查登录问题")]
    picks = {"u1": None, "q1": None, "w": None}  # the scores would start a thread with the wait
    assert decode(messages, picks, rules=False)["w"] is None
    assert decode(messages, picks)["w"] == "u2"


def test_a_wait_with_no_report_open_is_left_alone() -> None:
    # Only a question is open: a wait may be the start of anything (「帮我查一下这个景点」).
    messages = [OUTAGE[2], msg("w", "gm", 1.5, "各位稍等，我们在排查登录问题")]
    assert decode(messages, {"q1": None, "w": None})["w"] is None
    # ... and a report the speaker is already in is theirs to go on with, not this rule's.
    own = [*OUTAGE, msg("w", "yu", 1.5, "我看看")]
    assert decode(own, {"u1": None, "q1": None, "w": None})["w"] is None


SIGNUP = "周六下午2-5点 订了3号4号场 接龙 1.老K"


def test_a_chain_copy_names_the_entry_it_extends() -> None:
    messages = [
        msg("s1", "k", 0, SIGNUP),
        msg("s2", "zhou", 1, SIGNUP + " 2.小舟"),
        msg("x1", "yy", 2, "有人知道哪里穿线便宜吗"),
        msg("s3", "ping", 3, SIGNUP + " 2.小舟 3.萍萍"),
        msg("n1", "k", 4, "老K:"),
        msg("n2", "ping", 5, "老K: 好的"),  # a short line extended is no chain entry
    ]
    assert L.chain_copies(messages) == [-1, 0, -1, 1, -1, -1]


def test_a_chain_copy_joins_the_signup_even_after_an_idle_hour() -> None:
    late = SETTINGS.idle.total_seconds() / 60 + 30
    messages = [
        msg("s1", "k", 0, SIGNUP),
        msg("s2", "zhou", 1, SIGNUP + " 2.小舟"),
        msg("x1", "yy", 2, "有人知道哪里穿线便宜吗"),
        msg("x2", "ping", 3, "馆门口那家 BG80 四十五 当场穿"),
        msg("s3", "dong", late, SIGNUP + " 2.小舟 3.东哥"),
    ]
    groups, links = L.assign_learned(messages, NameIndex(messages), SETTINGS)
    assert ["s1", "s2", "s3"] in groups
    assert links["s3"] == "s2"


# Staff serve two people at once; each asker goes on with their own request.
SERVING = [
    msg("a1", "li", 0, "帮我找个评分4.5以上的酒店"),
    msg("a2", "staff", 1, "推荐北京饭店"),
    msg("b1", "he", 1.5, "有没有免费的景点推荐"),
    msg("b2", "staff", 2, "推荐颐和园"),
]


def test_an_asker_stays_in_their_own_conversation() -> None:
    messages = [*SERVING, msg("a3", "li", 3, "它家价格多少")]
    picks = {"a1": None, "b1": None, "a2": "a1", "b2": "b1", "a3": "b2"}  # the scores follow staff's last line
    assert decode(messages, picks, rules=False)["a3"] == "b2"
    assert decode(messages, picks)["a3"] == "a2"


def test_an_asker_answering_someone_elses_question_joins_it() -> None:
    messages = [*SERVING[:3], msg("b2", "staff", 2, "您想去哪个区？"), msg("a3", "li", 3, "海淀的就行")]
    picks = {"a1": None, "b1": None, "a2": "a1", "b2": "b1", "a3": "b2"}
    assert decode(messages, picks)["a3"] == "b2"


def test_an_asker_stays_even_when_the_staff_line_shares_words_with_it() -> None:
    # 「颐和园」 and 「景点」 are in the other conversation, but staff are in both: the asker goes on with theirs.
    messages = [*SERVING, msg("a3", "li", 3, "酒店附近有景点吗 颐和园远吗")]
    picks = {"a1": None, "b1": None, "a2": "a1", "b2": "b1", "a3": "b2"}
    assert decode(messages, picks)["a3"] == "a2"


def test_an_asker_sharing_more_words_with_a_conversation_between_others_joins_it() -> None:
    other = msg("b2", "wang", 2, "颐和园免费 景点里最好")
    messages = [*SERVING[:3], other, msg("a3", "li", 3, "颐和园我也去过 景点里最好")]
    picks = {"a1": None, "b1": None, "a2": "a1", "b2": "b1", "a3": "b2"}
    assert decode(messages, picks)["a3"] == "b2"
