import itertools

from conftest import message
from threadkeep.chunks.chat import chunk_thread_windows
from threadkeep.model import Thread
from threadkeep.readers.bundle import parse_message

NAMES = {"zhang": "张", "li": "客服-小李"}
REPORT = "the tray icon does not open when I click it on 3.1.4"


def words(text: str) -> int:
    return len(text.split())


def long_thread(details: int, ending: tuple[str, ...] = (), opening: str = REPORT):
    """`opening`, `details` lines of back and forth, then `ending` (staff's line, the reporter's, in turn)."""
    raw = [message("m0", "zhang", 0, opening)]
    for i in range(1, details + 1):
        raw.append(message(f"m{i}", "li" if i % 2 else "zhang", i, f"step {i} " + "detail " * 6))
    for offset, text in enumerate(ending, details + 1):
        raw.append(message(f"m{offset}", "li" if offset % 2 else "zhang", offset, text))
    messages = {m.id: m for m in (parse_message(item, NAMES) for item in raw)}
    return Thread("g-1", tuple(messages)), messages


def shared(chunks) -> set[str]:
    return set.intersection(*(set(chunk.evidence_ids) for chunk in chunks))


def test_every_window_of_a_long_thread_opens_with_the_report_and_stays_within_the_limit() -> None:
    thread, messages = long_thread(30)
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.evidence_ids[0] == "m0"
        assert words(chunk.embedding_input) <= 40
        assert chunk.text.splitlines()[0].endswith(REPORT)
    covered = {mid for chunk in chunks for mid in chunk.evidence_ids}
    assert covered == set(thread.message_ids)


def test_every_window_of_a_resolved_thread_holds_the_fix_and_its_confirmation() -> None:
    fix, thanks = "quit it, delete the cache folder, reinstall the tray helper and restart", "that worked, thanks"
    thread, messages = long_thread(30, (fix, thanks))
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=60)
    assert len(chunks) > 3
    assert {chunk.resolution_state for chunk in chunks} == {"resolved"}
    assert shared(chunks) == {"m0", "m31", "m32"}
    for chunk in chunks:
        assert words(chunk.embedding_input) <= 60
        assert chunk.text.splitlines()[-2:] == [
            line for line in chunk.text.splitlines() if line.endswith((fix, thanks))
        ]


def test_a_window_still_repeats_the_line_before_it() -> None:
    thread, messages = long_thread(30, ("quit it, delete the cache folder, reinstall the tray helper", "that worked"))
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    held = shared(chunks)
    for previous, current in itertools.pairwise(chunks):
        last_of_previous = [mid for mid in previous.evidence_ids if mid not in held][-1]
        first_of_current = next(mid for mid in current.evidence_ids if mid not in held)
        assert first_of_current == last_of_previous


def test_a_report_too_long_to_hold_is_not_repeated_in_every_window() -> None:
    thread, messages = long_thread(30)
    messages["m0"] = parse_message(message("m0", "zhang", 0, "icon " * 30), NAMES)
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    assert chunks[0].evidence_ids[0] == "m0"
    assert "m0" not in shared(chunks)


def test_a_long_chat_that_reports_no_problem_holds_no_line_in_every_window() -> None:
    ending = ("see you at the lake on Sunday then", "great, see you")
    thread, messages = long_thread(30, ending, opening="hey, how was the trip?")
    chunks = chunk_thread_windows(thread, messages, words, max_tokens=40)
    assert len(chunks) > 3
    assert not shared(chunks)
