"""Resolution states of small-group threads: who confirms, how, and questions answered without a fix."""

from __future__ import annotations

import pytest

from conftest import message
from threadkeep.readers.bundle import parse_message
from threadkeep.threads import cues
from threadkeep.threads.resolution import accepts, confirms, reports_done, resolution_state


def thread(*lines: tuple[str, str]):
    return [parse_message(message(f"m{index}", sender, index, text), {}) for index, (sender, text) in enumerate(lines)]


BOILER = [
    ("mom", "Is anyone else without hot water?"),
    ("dad", "The boiler shows a red light again"),
    ("jake", "did you try the reset button under the panel? hold it 10 sec"),
]


def test_the_family_boiler_is_resolved_by_the_hot_water_coming_back():
    lines = [*BOILER, ("dad", "Held it, light went green"), ("mom", "hot water is back 👍")]
    assert resolution_state(thread(*lines)) == "resolved"


def test_whoever_had_the_problem_reporting_the_suggestion_done_confirms_it():
    assert resolution_state(thread(*BOILER, ("dad", "Held it, light went green"))) == "resolved"
    assert resolution_state(thread(*BOILER, ("dad", "ok will try when I'm home"))) == "workaround"


def test_a_bystander_doing_it_is_no_confirmation_but_saying_it_works_is():
    assert resolution_state(thread(*BOILER, ("gran", "Held mine for 10 sec too"))) == "workaround"
    assert resolution_state(thread(*BOILER, ("gran", "me too, it works now"))) == "resolved"


def test_a_fix_told_after_a_suggestion_with_the_shared_confirmation_words():
    lines = [
        ("mom", "No hot water this morning"),
        ("dad", "check the pressure gauge, it should be above 1"),
        ("mom", "pressure was at 0.4, topped up, all good now"),
    ]
    assert resolution_state(thread(*lines)) == "resolved"
    # The same words the thread assigner reads as a confirmation (one vocabulary, in cues.py).
    assert cues.confirms_fix("pressure was at 0.4, topped up, all good now")


@pytest.mark.parametrize(
    "lines",
    [
        [("u1", "路由器灯一直闪红"), ("u2", "拔了电源等半分钟再插上试试"), ("u1", "重启了，可以了")],
        [("u1", "打印机不出纸"), ("u2", "把纸盒拉出来重新推到底"), ("u1", "推了一下 出纸了")],
        [
            ("u1", "the app is stuck on the splash screen"),
            ("u2", "clear its cache in settings"),
            ("u1", "cleared it, opens fine"),
        ],
    ],
)
def test_the_asker_reporting_what_they_did(lines):
    assert resolution_state(thread(*lines)) == "resolved"


def test_a_denial_after_a_confirmation_takes_it_back():
    lines = [
        ("u1", "wifi keeps dropping"),
        ("u2", "switch the router to channel 6"),
        ("u3", "that fixed it for me"),
        ("u1", "still not working here"),
    ]
    assert resolution_state(thread(*lines)) == "workaround"
    assert resolution_state(thread(*lines[:3])) == "resolved"


def test_a_result_foretold_or_the_suggesters_own_words_confirm_nothing():
    assert resolution_state(thread(("u1", "没网了"), ("u2", "我重启一下路由器"), ("u2", "应该好了"))) == "workaround"
    restarted = thread(("u1", "no wifi?"), ("u2", "I'll restart it"), ("u3", "should be back now"))
    assert resolution_state(restarted) == "workaround"
    assert not confirms("退出重新登录就好了")  # a suggestion, however it ends


@pytest.mark.parametrize(
    "lines,state",
    [
        # A "who" question answered by an offer: resolved once the asker takes it, as a fact answer is.
        ([("mom", "who's picking up grandma at 5?"), ("jake", "I can"), ("mom", "thanks love")], "resolved"),
        ([("mom", "who's picking up grandma at 5?"), ("jake", "I can")], "workaround"),
        ([("u1", "周五晚上谁值班"), ("u2", "我"), ("u1", "好")], "resolved"),
        ([("u1", "周末有客服吗"), ("u2", "有的 10点到5点"), ("u1", "好的")], "resolved"),
        ([("u1", "what time does the pool open on sunday"), ("u2", "9am"), ("u1", "great thanks")], "resolved"),
        # A how-to or a fix needs more than an "ok": the sample's convention for 「好的」 after a how-to.
        ([("u1", "how do I turn off alerts?"), ("u2", "Settings > Alerts > off"), ("u1", "ok thanks")], "workaround"),
        ([("u1", "导出按钮怎么找不到"), ("u2", "在右上角菜单里"), ("u1", "好的")], "workaround"),
        # A plan to try is no acceptance, even of a fact.
        ([("u1", "is the gym open on the 1st?"), ("u2", "yes, 10 to 4"), ("u1", "ok I'll try tomorrow")], "workaround"),
        # Nobody answered: a question back, a promise to look, no news yet.
        ([("u1", "when is the next release?"), ("u2", "no news yet, will post when we know")], "open"),
        ([("u1", "楼道灯坏了"), ("u2", "我跟物业说一下")], "open"),
    ],
)
def test_questions_answered_without_a_fix(lines, state):
    assert resolution_state(thread(*lines)) == state


def test_an_answer_telling_it_is_already_done_is_taken_by_the_askers_ok():
    lines = [
        ("u1", "退款申请提交三天了没人处理"),
        ("u2", "订单号发我一下"),
        ("u1", "2026001"),
        ("u2", "已经退回了，三个工作日到账"),
        ("u1", "好的 谢谢"),
    ]
    assert resolution_state(thread(*lines)) == "resolved"
    assert resolution_state(thread(*lines[:4])) == "workaround"


def test_the_asker_finding_it_alone():
    lines = [("nan", "Has anyone seen my reading glasses"), ("nan", "found them, they were on my head 🙈")]
    assert resolution_state(thread(*lines)) == "resolved"


def test_the_cue_functions_on_their_own():
    assert reports_done("Held it, light went green") and reports_done("拔了电池重新装")
    assert not reports_done("tried that, still failing") and not reports_done("我要出门了")
    assert accepts("thanks bro 🙏") and accepts("那7点半门口见") and not accepts("好的 我试试")


def test_a_thread_opening_with_a_thing_done_is_resolved_when_someone_takes_it():
    assert resolution_state(thread(("dan", "booked the court for 7 tomorrow"), ("eva", "great 👍"))) == "resolved"
    assert resolution_state(thread(("dan", "court for 7 tomorrow?"), ("eva", "great 👍"))) == "open"


@pytest.mark.parametrize("giving_in", ["好吧 那我一个个对比 有几十个😓", "ok fine, I'll rename them by hand"])
def test_giving_in_to_a_workaround_does_not_resolve_it(giving_in):
    lines = [
        ("kk", "同步文件夹里一堆冲突副本是怎么回事"),
        ("staff", "两台设备离线时改了同一个文件，对比一下留下要的那份，另一份删掉"),
        ("kk", giving_in),
    ]
    assert resolution_state(thread(*lines)) == "workaround"


@pytest.mark.parametrize(
    "lines",
    [
        [("head", "观察记录交电子版 周四下班前发我邮箱"), ("liu", "好的 谢谢园长"), ("wang", "收到")],
        [("coach", "heads up: training moves to Friday, same time"), ("ana", "👍"), ("ben", "ok thanks")],
    ],
)
def test_an_announcement_two_others_take_is_settled_not_open(lines):
    assert resolution_state(thread(*lines)) == "resolved"
    assert resolution_state(thread(*lines[:2])) == "open"  # one taker may be staff acknowledging a report


def test_a_report_acknowledged_by_staff_stays_open():
    assert resolution_state(thread(("ann", "打印机又卡纸了"), ("staff", "收到"))) == "open"
