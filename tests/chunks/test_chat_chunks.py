import itertools

from conftest import message
from threadkeep.chunks.chat import chunk_thread_windows
from threadkeep.model import Thread
from threadkeep.readers.bundle import parse_message

NAMES = {"zhang": "张", "li": "客服-小李"}


def words(text: str) -> int:
    return len(text.split())


def long_thread(count: int):
    raw = [message("m0", "zhang", 0, "clicking the tray icon does nothing on 3.1.4")]
    raw += [message(f"m{i}", "li" if i % 2 else "zhang", i, f"step {i} " + "detail " * 6) for i in range(1, count)]
    raw.append(message(f"m{count}", "li", count, "found it: reinstall the tray helper and restart"))
    messages = {m.id: m for m in (parse_message(item, NAMES) for item in raw)}
    return Thread("g-1", tuple(messages)), messages


def test_every_window_of_a_long_thread_opens_with_the_report_and_stays_within_the_limit() -> None:
    thread, messages = long_thread(30)
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.evidence_ids[0] == "m0"
        assert words(chunk.embedding_input) <= 40
        assert chunk.text.splitlines()[0].endswith("clicking the tray icon does nothing on 3.1.4")
    assert {"m0", "m30"} <= set(chunks[-1].evidence_ids)
    covered = {mid for chunk in chunks for mid in chunk.evidence_ids}
    assert covered == set(thread.message_ids)


def test_a_window_still_repeats_the_line_before_it() -> None:
    thread, messages = long_thread(30)
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    for previous, current in itertools.pairwise(chunks):
        assert current.evidence_ids[1] == previous.evidence_ids[-1]


def test_a_report_too_long_to_repeat_opens_only_the_first_window() -> None:
    thread, messages = long_thread(30)
    messages["m0"] = parse_message(message("m0", "zhang", 0, "icon " * 20), NAMES)
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    assert chunks[0].evidence_ids[0] == "m0"
    assert all("m0" not in chunk.evidence_ids for chunk in chunks[1:])
