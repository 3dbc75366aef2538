from conftest import learned_idle_minutes, message
from threadkeep.readers.bundle import parse_message
from threadkeep.threads import ThreadSettings, build_threads, reconstruct
from threadkeep.threads.utterances import merge_utterances

NAMES = {"u1": "小明", "u2": "客服-小云", "u3": "老王", "u4": "阿花"}
RULES = ThreadSettings(assigner="rules")  # this file tests rules.py; tests/threads/ the learned assigner


def parse(*raw):
    return sorted((parse_message(item, NAMES) for item in raw), key=lambda m: m.sent_at)


def groups(messages, settings=RULES):
    return [set(thread.message_ids) for thread in reconstruct(messages, settings)]


def same_thread(threads, *ids):
    return any(set(ids) <= thread for thread in threads)


def test_a_senders_quick_messages_form_one_utterance():
    messages = parse(
        message("a", "u1", 0, "我这边"),
        message("b", "u1", 0.5, "点图标"),
        message("c", "u1", 1.2, "没反应"),
        message("d", "u1", 3, "有人吗"),
    )
    utterances = merge_utterances(messages, ThreadSettings().merge_gap)
    assert [[m.id for m in u.messages] for u in utterances] == [["a", "b", "c"], ["d"]]


def test_quote_joins_the_quoted_thread_despite_unrelated_talk_between():
    messages = parse(
        message("q", "u1", 0, "我这边点了图标一点反应都没有，怎么办？"),
        message("x1", "u3", 2, "有谁知道企业版发票怎么开吗？"),
        message("x2", "u4", 3, "发票在管理后台的账单页面可以申请"),
        message("x3", "u3", 5, "好的我去看看管理后台"),
        message("a", "u2", 25, "结束托盘里的进程再重新打开", quotedMessageId="q"),
        message("ok", "u1", 27, "好了，谢谢", quotedMessageId="a"),
    )
    threads = groups(messages)
    assert same_thread(threads, "q", "a", "ok")
    assert not same_thread(threads, "q", "x1")


def test_mention_joins_the_mentioned_persons_thread():
    messages = parse(
        message("q1", "u1", 0, "同步一直卡在99%怎么回事？"),
        message("q2", "u3", 1, "登录的时候提示 E1024 是什么原因？"),
        message("a2", "u2", 2, "@老王 你那个是证书过期了，更新到3.1.4", mentionedRefs=["u3"]),
        message("a1", "u2", 3, "@小明 把同步目录里的临时文件删掉"),
    )
    threads = groups(messages)
    assert same_thread(threads, "q2", "a2")
    assert same_thread(threads, "q1", "a1")
    assert not same_thread(threads, "q1", "q2")


def test_irc_style_addressing_counts_as_a_mention():
    messages = parse(
        message("q1", "alice", 0, "how do I mount an ntfs partition?"),
        message("q2", "bob", 0.2, "anyone know why wifi drops after suspend?"),
        message("a1", "carol", 1, "alice: install ntfs-3g then use the disks tool"),
        message("a2", "dave", 1.1, "bob, try reloading the iwlwifi module"),
    )
    threads = groups(messages)
    assert same_thread(threads, "q1", "a1")
    assert same_thread(threads, "q2", "a2")


def test_a_question_unlike_any_active_thread_opens_a_new_thread():
    messages = parse(
        message("q1", "u1", 0, "上传速度特别慢，只有100KB/s"),
        message("a1", "u2", 1, "上传速度特别慢的话，在设置里关掉上传限速"),
        message("q2", "u3", 2, "手机App怎么扫码登录？"),
    )
    threads = groups(messages)
    assert same_thread(threads, "q1", "a1")
    assert not same_thread(threads, "q1", "q2")


def test_lexical_overlap_joins_without_spaces_between_words():
    messages = parse(
        message("q1", "u1", 0, "共享文件夹的权限怎么设置成只读？"),
        message("other", "u3", 0.5, "今天下午几点开会"),
        message("a1", "u4", 20, "共享文件夹权限在右键菜单里设置只读"),
    )
    assert same_thread(groups(messages), "q1", "a1")


def test_threads_close_when_idle_and_never_span_more_than_the_maximum():
    def pair(minutes: float) -> list:
        return parse(
            message("a", "u1", 0, "同步冲突的文件怎么处理"), message("b", "u2", minutes, "同步冲突的文件会保留两份")
        )

    idle = pair(45)
    assert not same_thread(groups(idle, ThreadSettings(resume_paused=False, assigner="rules")), "a", "b")
    # The learned model keeps a thread open for the gap it was trained with, and closes it then.
    assert not same_thread(groups(pair(learned_idle_minutes() + 15), ThreadSettings(resume_paused=False)), "a", "b")
    # The resume step then takes the unanswered question up: the next line, however late, answers it.
    assert same_thread(groups(idle), "a", "b")

    longest = ThreadSettings().max_span.total_seconds() / 60
    steps = int(longest / 20) + 7  # a chain two hours longer than any thread may span
    chain = [message(f"m{i}", "u1" if i % 2 else "u2", i * 20, f"同步冲突的文件处理第{i}步") for i in range(steps)]
    threads = groups(parse(*chain))
    spans = [sorted(int(mid[1:]) for mid in thread) for thread in threads]
    assert all((ids[-1] - ids[0]) * 20 <= longest for ids in spans)
    assert len(threads) >= 2

    shorter = groups(idle, ThreadSettings(assigner="rules", idle=RULES.idle * 2))
    assert same_thread(shorter, "a", "b")


def test_system_lines_stand_alone():
    messages = parse(
        message("q", "u1", 0, "怎么导出日志？"),
        message("s", "system", 0.5, "阿花 加入了群聊", type="system"),
        message("a", "u2", 1, "@小明 设置-关于-导出日志", mentionedRefs=["u1"]),
    )
    threads = reconstruct(messages)
    assert [thread.message_ids for thread in threads if "s" in thread.message_ids] == [("s",)]
    assert same_thread([set(t.message_ids) for t in threads], "q", "a")


def test_reply_links_point_to_earlier_messages():
    messages = parse(
        message("q", "u1", 0, "怎么导出日志？"),
        message("a", "u2", 1, "设置-关于-导出日志", quotedMessageId="q"),
    )
    (thread,) = reconstruct(messages)
    assert thread.reply_to == {"a": "q"}


def test_a_direct_chat_is_cut_into_sessions_by_idle_gap_only():
    messages = parse(
        message("d1", "u1", 0, "did you book the dentist for mum?"),
        message("d2", "u3", 1, "yes thursday 3pm"),
        message("d3", "u1", 2, "great. also the car is making a weird noise again"),
        message("d4", "u3", 3, "take it to the garage on main street"),
        message("d5", "u1", 120, "garage says it was the belt, fixed now"),
    )
    threads = [set(thread.message_ids) for thread in build_threads("direct", messages)]
    assert threads == [{"d1", "d2", "d3", "d4"}, {"d5"}]
    assert build_threads("direct", messages)[0].reply_to == {"d2": "d1", "d3": "d2", "d4": "d3"}
