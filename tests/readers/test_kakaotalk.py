from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from threadkeep.readers import detect_format, kakaotalk, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kakaotalk"
PC = FIXTURES / "KakaoTalk_20240310_2115_02_123_group.txt"
MOBILE = FIXTURES / "Talk_2024.3.10 21_15-1.txt"
ENGLISH = FIXTURES / "english_pc.txt"
KST = timezone(timedelta(hours=9))


def test_detects_pc_mobile_and_english_exports_only():
    for path in (PC, MOBILE, ENGLISH):
        assert detect_format(path).NAME == "kakaotalk", path
    fixtures = FIXTURES.parent
    for path in (
        fixtures / "whatsapp" / "WhatsApp Chat with Project Team.txt",
        fixtures / "wechat" / "twelve_hour.txt",
        fixtures / "line" / "[LINE] Chat with Bob.txt",
        fixtures / "irc" / "notes.log",
    ):
        assert not kakaotalk.detect(path), path


def test_pc_group_export():
    result = read_path(PC)
    assert result.skipped == []
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.kind) == ("kakaotalk:등산 모임 4", "group")
    assert conversation.metadata["timezone"] == "Asia/Seoul (+09:00) assumed"
    assert [(message.sender, message.kind, message.text) for message in result.messages] == [
        ("김민수", "text", "내일 몇 시에 모여요?"),
        ("이지은", "text", "9시 정문 앞이요\n준비물은 물이랑 간식"),
        ("박서준", "image", "[image]"),
        ("system", "system", "박서준님이 들어왔습니다."),
        ("김민수", "text", "삭제된 메시지입니다."),
        ("이지은", "text", "도착하면 연락 주세요"),
    ]
    assert result.messages[0].sent_at == datetime(2024, 3, 9, 8, 5, tzinfo=KST)
    assert result.messages[3].sent_at == result.messages[2].sent_at  # an event takes the time above it
    assert result.messages[4].recalled
    assert result.messages[-1].sent_at == datetime(2024, 3, 10, 0, 15, tzinfo=KST)  # 오전 12:15


def test_mobile_export_with_dates_on_every_line():
    result = read_path(MOBILE)
    assert result.skipped == []
    (conversation,) = result.conversations
    assert (conversation.title, conversation.kind) == ("Mina", "direct")
    assert [(message.sent_at.strftime("%d %H:%M"), message.sender, message.text) for message in result.messages] == [
        ("09 19:40", "Mina", "저녁 먹었어?"),
        ("09 19:42", "Joon", "아직, 같이 먹을래?"),
        ("09 19:43", "Mina", "[file] menu.pdf"),
        ("09 20:00", "system", "Joon님이 나갔습니다."),
        ("10 09:01", "Joon", "좋은 아침\n오늘은\n  비 온대"),
    ]


def test_english_pc_lines_and_a_pasted_mobile_line():
    result = read_path(ENGLISH)
    assert [(message.sent_at.strftime("%H:%M"), message.sender, message.kind) for message in result.messages] == [
        ("20:05", "Chris", "text"),
        ("20:06", "Dana", "image"),
        ("20:06", "Dana", "text"),
        ("23:59", "Dana", "text"),
    ]


def test_bad_dates_and_headerless_text(tmp_path: Path):
    path = tmp_path / "chat.txt"
    path.write_text(
        "A 님과 카카오톡 대화\n저장한 날짜 : 2024-03-10 21:15:02\n\nstray line\n"
        "--------------- 2024년 2월 30일 금요일 ---------------\n[A] [오전 8:05] lost\n"
        "2024. 13. 9. 오후 7:40, A : bad month\n2024. 3. 9. 오후 7:41, A : kept\n",
        encoding="utf-8",
    )
    result = kakaotalk.read(path)
    assert [message.text for message in result.messages] == ["kept"]
    assert [(skip.line, skip.reason.split(" (")[0]) for skip in result.skipped] == [
        (4, "text before the first KakaoTalk message"),
        (5, "bad date line"),
        (6, "message before any readable date line"),
        (7, "bad date/time"),
    ]
