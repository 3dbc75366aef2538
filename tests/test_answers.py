"""Answerability, refusals that help, both sources heard and decay that reorders, on a real SQLite store.

The hash embedder stands in for the model: none of these behaviours depends on retrieval quality.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_bundle
from threadkeep.answer import NOT_AN_ANSWER
from threadkeep.answer_types import asked_types, count_value, standard_question
from threadkeep.answerability import (
    ABOUT_SOMEONE_ELSE,
    AGREEMENT_STANDOUT,
    MIN_STANDOUT,
    ONLY_ASKED,
    action_asked,
    agrees,
    asks_only,
    assess,
    codes,
    question_units,
    resegmented,
    standout,
)
from threadkeep.api import KnowledgeBase
from threadkeep.cli import main
from threadkeep.embed import HashEmbedder
from threadkeep.search import Retrieval, retrieve
from threadkeep.store import SearchFilters

NOW = datetime(2026, 5, 20, tzinfo=UTC)
FAQ = """# 产品常见问题

## 错误码

### E1024：登录已过期

出现 E1024 时，退出账号后重新登录即可。

### 0x80070005：拒绝访问

以管理员身份运行安装程序，或关闭杀毒软件后重试。

## 门禁

### 访客登记

访客到前台登记后领取临时门卡。
"""


def chat(mid: str, sender: str, when: str, text: str, conversation: str = "g-1") -> dict:
    return {"messageId": mid, "conversationRef": conversation, "senderRef": sender, "sentAt": when, "text": text}


def ingest_and_ask(tmp_path: Path, sources: list[Path], *questions: str) -> list:
    """The answers to `questions` from a new store (hash embedder) holding `sources`, asked at NOW."""
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as knowledge:
        for source in sources:
            knowledge.ingest(source)
        return [knowledge.ask(question, now=NOW) for question in questions]


def ask_of_document(tmp_path: Path, markdown: str, *questions: str) -> list:
    """The answers to `questions` from a new store holding one document, `markdown`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "doc.md").write_text(markdown, encoding="utf-8")
    return ingest_and_ask(tmp_path, [docs], *questions)


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> KnowledgeBase:
    folder = tmp_path_factory.mktemp("answers")
    docs = folder / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text(FAQ, encoding="utf-8")
    messages = [
        chat("m1", "amy", "2026-05-14T10:00:00+08:00", "what is the gate code for the back entrance"),
        chat("m2", "ben", "2026-05-14T10:02:00+08:00", "the code for the gate is 4417"),
        chat("m3", "amy", "2026-05-14T10:03:00+08:00", "it works, thanks"),
        chat("m4", "cat", "2026-05-15T09:00:00+08:00", "客户端一直提示 E1024 怎么办"),
        chat("m5", "dan", "2026-05-15T09:05:00+08:00", "退出账号重新登录就好了，我也遇到过 E1024"),
        chat("m6", "cat", "2026-05-15T09:07:00+08:00", "可以了 谢谢"),
    ]
    knowledge = KnowledgeBase.open(folder / "kb.db", HashEmbedder(64))
    knowledge.ingest(write_bundle(folder / "bundle", messages))
    knowledge.ingest(docs)
    yield knowledge
    knowledge.close()


def test_codes_are_recognised():
    assert codes("装客户端报0x80070005，E1024 也有，3.2.0 升级后 redirect_uri 错") == [
        "0x80070005",
        "E1024",
        "3.2.0",
        "redirect_uri",
    ]
    assert codes("What did Caroline realize after her charity race?") == []


def test_a_code_that_appears_nowhere_is_refused_with_its_name_and_the_nearest_passages(kb):
    answer = kb.ask("报错 E4242 怎么解决", now=NOW)
    assert answer.status == "no_answer"
    assert "E4242" in answer.reason
    assert not answer.documents and not answer.chat
    assert answer.nearest and all(c.label.startswith(NOT_AN_ANSWER) for c in answer.nearest)
    data = answer.to_dict()
    assert data["reason"] == answer.reason
    assert data["nearest"] and all(c["label"].startswith("Not an answer:") for c in data["nearest"])
    assert answer.reason in answer.text and "not an answer" in answer.text.lower()


@pytest.mark.parametrize("question", ["what is the gate code", "what is the gate code for the back entrance"])
def test_a_question_the_store_plainly_holds_is_answered(kb, question):
    answer = kb.ask(question, now=NOW)
    assert answer.status == "answered", answer.reason
    assert any("4417" in c.excerpt for c in answer.chat)
    assert answer.reason is None and answer.nearest == []


def test_a_bare_code_full_text_finds_is_answered_from_both_sources(kb):
    answer = kb.ask("E1024", now=NOW)
    assert answer.status == "answered", answer.reason
    assert any("E1024" in c.excerpt for c in answer.documents)
    assert any("E1024" in c.excerpt for c in answer.chat)


def test_a_price_no_passage_states_is_refused(kb):
    answer = kb.ask("E1024 的修复服务多少钱", now=NOW)
    assert answer.status == "no_answer"
    assert "price" in answer.reason


def test_show_nearest_adds_labelled_passages_to_an_answer(kb):
    answer = kb.ask("what is the gate code", now=NOW, show_nearest=True)
    assert answer.status == "answered" and answer.nearest
    cited = {c.chunk_id for c in answer.documents + answer.chat}
    assert all(c.label.startswith(NOT_AN_ANSWER) and c.chunk_id not in cited for c in answer.nearest)


def test_an_empty_store_says_it_is_empty_and_where(tmp_path):
    location = tmp_path / "empty.db"
    with KnowledgeBase.open(location, HashEmbedder(64)) as empty:
        answer = empty.ask("anything at all")
    assert answer.status == "no_answer" and "empty" in answer.reason and str(location) in answer.reason


def test_the_question_about_someone_else_is_flagged(tmp_path):
    messages = [
        chat("c1", "Caroline", "2023-05-08T13:50:00+00:00", "How was the charity race last weekend?", "conv"),
        chat(
            "c2",
            "Melanie",
            "2023-05-08T13:51:00+00:00",
            "Thanks, Caroline! After the charity race I realized that self-care is really important.",
            "conv",
        ),
        chat("c3", "Caroline", "2023-05-08T13:52:00+00:00", "That is so true, I am glad you went.", "conv"),
    ]
    swapped, right = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages)],
        "What did Caroline realize after her charity race?",
        "What did Melanie realize after her charity race?",
    )
    assert ABOUT_SOMEONE_ELSE in swapped.flags
    notes = [note for c in swapped.chat + swapped.nearest for note in c.notes]
    assert any("Melanie" in note and "Caroline" in note for note in notes)
    assert ABOUT_SOMEONE_ELSE not in right.flags


def _fix_thread(
    prefix: str, when: str, conversation: str, fix: str, report: str = "sync stops after the laptop wakes from sleep"
) -> list[dict]:
    return [
        chat(f"{prefix}1", "ann", when, report, conversation),
        chat(f"{prefix}2", "bob", when.replace(":00:00", ":02:00"), fix, conversation),
        chat(f"{prefix}3", "ann", when.replace(":00:00", ":04:00"), "that fixed it, thanks", conversation),
    ]


FIX = "turn off power saving for the network adapter in device manager"


def test_decay_puts_the_newer_of_two_equal_fixes_first_but_not_above_a_much_closer_old_one(tmp_path):
    old = _fix_thread("o", "2026-02-01T10:00:00+00:00", "old-group", FIX)
    new = _fix_thread("n", "2026-04-15T10:00:00+00:00", "new-group", FIX)
    weak = [
        chat("w1", "cy", "2026-05-10T10:00:00+00:00", "my laptop fan is loud", "weak-group"),
        chat("w2", "dee", "2026-05-10T10:01:00+00:00", "clean the fan", "weak-group"),
    ]
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as store:
        for name, messages in (("old", old), ("new", new), ("weak", weak)):
            store.ingest(write_bundle(tmp_path / name, messages))
        hits = store.search("sync stops after the laptop wakes from sleep", k=3, now=NOW)
    order = [hit.chunk.source_ref for hit in hits]
    assert order.index("new-group") < order.index("old-group")
    assert order.index("old-group") < order.index("weak-group")


@pytest.mark.parametrize(
    ("newer_report", "newer_leads"),
    [
        ("sync stops after the laptop wakes from sleep again", True),  # one word more: equally close
        ("sync stops after the laptop wakes", False),  # "from sleep" is gone: the older is closer
    ],
)
def test_of_two_fixes_both_retrievers_find_equally_close_the_newer_leads(tmp_path, newer_report, newer_leads):
    """Min-max scaling sets the second full-text candidate far below the first even when their scores are near;
    the newer fix must still lead when both retrievers see the two as equally close, and only then."""
    question = "sync stops after the laptop wakes from sleep"
    bundles = {
        "old": _fix_thread("o", "2026-02-01T10:00:00+00:00", "old-group", FIX, question),
        "new": _fix_thread("n", "2026-04-15T10:00:00+00:00", "new-group", FIX, newer_report),
        "others": [
            chat(f"x{n}", "cy", f"2026-05-1{n}T10:00:00+00:00", text, f"other-{n}")
            for n, text in enumerate(
                ["my laptop fan is loud after sleep", "the printer stops after an hour", "outlook stops syncing"]
            )
        ],
    }
    # Wide enough that the few words of these lines do not share buckets by chance.
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(1024)) as store:
        for name, messages in bundles.items():
            store.ingest(write_bundle(tmp_path / name, messages))
        hits = store.search(question, k=4, now=NOW)
    order = [hit.chunk.source_ref for hit in hits]
    # Each copy is one whole thread (report, fix, thanks), so the two are compared as what they are.
    assert {hit.chunk.source_ref: len(hit.chunk.evidence_ids) for hit in hits[:2]} == {"old-group": 3, "new-group": 3}
    assert (order.index("new-group") < order.index("old-group")) is newer_leads
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_documents_do_not_crowd_chat_out(tmp_path):
    sections = "\n\n".join(
        f"## Sync stops, case {n}\n\nSync stops after sleep on model {n}: check the sync service and the proxy."
        for n in range(8)
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(f"# Manual\n\n{sections}\n", encoding="utf-8")
    fix = _fix_thread("t", "2026-05-01T10:00:00+00:00", "help", "restart the sync service after sleep")
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as store:
        store.ingest(docs)
        store.ingest(write_bundle(tmp_path / "bundle", fix))
        query = "sync stops after sleep"
        both = store.search(query, per_source=3, now=NOW)
        answer = store.ask(query, now=NOW)
    assert [hit.chunk.source_type for hit in both[:2]].count("chat") == 1
    kinds = [hit.chunk.source_type for hit in both]
    assert kinds.count("chat") == 1 and 1 <= kinds.count("document") <= 3
    assert answer.status == "answered" and answer.documents and answer.chat


def test_cli_ask_and_search_options(kb, tmp_path):
    runner = CliRunner()
    location = kb.store.stats()["location"]
    env = {"THREADKEEP_EMBEDDER": "hash-64"}
    refused = runner.invoke(main, ["ask", "E4242", "--json", "--db", location, "--now", NOW.isoformat()], env=env)
    assert refused.exit_code == 0, refused.output
    data = json.loads(refused.output)
    assert data["status"] == "no_answer" and "E4242" in data["reason"] and data["nearest"]
    text = runner.invoke(main, ["ask", "E4242", "--db", location], env=env)
    assert "No answer: no message or section mentions E4242" in text.output and NOT_AN_ANSWER in text.output
    shown = runner.invoke(main, ["ask", "what is the gate code", "--show-nearest", "--db", location], env=env)
    assert "4417" in shown.output and NOT_AN_ANSWER in shown.output
    found = runner.invoke(main, ["search", "E1024", "--per-source", "1", "--json", "--db", location], env=env)
    hits = json.loads(found.output)["hits"]
    assert sorted(hit["source_type"] for hit in hits) == ["chat", "document"]
    assert Path(location).exists()


def test_answerability_holds_while_no_chunk_has_a_vector_yet(tmp_path):
    """Background embedding can run behind ingest: full text alone must still answer and refuse."""
    messages = [
        chat("v1", "amy", "2026-05-14T10:00:00+08:00", "what is the gate code for the back entrance"),
        chat("v2", "ben", "2026-05-14T10:02:00+08:00", "the code for the gate is 4417"),
        chat("v3", "amy", "2026-05-14T10:03:00+08:00", "it works, thanks"),
        chat("v4", "cat", "2026-05-15T09:00:00+08:00", "the printer on floor 2 jams on double-sided jobs"),
        chat("v5", "dan", "2026-05-15T09:05:00+08:00", "remove the blue transport clip from tray 2"),
        chat("v6", "cat", "2026-05-15T09:07:00+08:00", "fixed, thanks"),
    ]
    location = tmp_path / "kb.db"
    with KnowledgeBase.open(location, HashEmbedder(64)) as knowledge:
        knowledge.ingest(write_bundle(tmp_path / "bundle", messages))
    with sqlite3.connect(location) as db:
        db.execute("UPDATE chunks SET embedding = NULL")
    with KnowledgeBase.open(location, HashEmbedder(64)) as knowledge:
        assert knowledge.store.dense_candidates(HashEmbedder(64).embed_query("gate code"), 5, SearchFilters()) == []
        answered = knowledge.ask("what is the gate code", now=NOW)
        refused = knowledge.ask("what does error E5150 mean", now=NOW)
    assert answered.status == "answered", answered.reason
    assert any("4417" in c.excerpt for c in answered.chat)
    assert refused.status == "no_answer" and "E5150" in refused.reason


def test_a_verbatim_question_from_an_assistant_session_is_answered(tmp_path):
    question = "Why does pytest say fixture 'db_session' not found when I run the tests in CI but not locally?"
    reply = (
        "The fixture is defined in tests/integration/conftest.py and the CI job runs pytest from tests/unit, "
        "so that conftest.py is never collected. Move db_session into tests/conftest.py."
    )
    messages = [
        chat("s1", "user", "2026-04-21T15:00:00+00:00", question, "session"),
        chat("s2", "assistant", "2026-04-21T15:00:20+00:00", reply, "session"),
        chat("s3", "user", "2026-04-21T15:04:00+00:00", "How do I cache pip downloads between CI runs?", "session"),
        chat("s4", "assistant", "2026-04-21T15:04:30+00:00", "Use actions/setup-python with cache: pip.", "session"),
    ]
    conversations = [{"conversationRef": "session", "title": "fixing CI", "kind": "assistant"}]
    (answer,) = ingest_and_ask(
        tmp_path, [write_bundle(tmp_path / "bundle", messages, conversations=conversations)], question
    )
    assert answer.status == "answered", answer.reason
    assert any("conftest.py" in c.excerpt for c in answer.chat)


def test_a_question_about_a_member_is_answered_only_from_a_passage_by_or_about_them(tmp_path):
    members = [
        {"senderRef": "ola", "displayName": "Ola Nowak"},
        {"senderRef": "ben", "displayName": "Ben Hart"},
        {"senderRef": "maya", "displayName": "Maya Chen"},
    ]
    messages = [
        chat("s1", "ola", "2026-05-11T10:00:00+00:00", "Ben, what size shoes do you wear? I'm ordering them"),
        chat("s2", "ben", "2026-05-11T10:06:00+00:00", "42.5 in the Scarpa ones"),
        chat("s3", "ola", "2026-05-11T10:07:00+00:00", "noted"),
        chat("s4", "maya", "2026-05-12T18:30:00+00:00", "the mats on floor 2 have a tear near the cave"),
        chat("s5", "ben", "2026-05-12T18:41:00+00:00", "taped it with the grey repair tape, supplier comes Thursday"),
    ]
    theirs, nobody = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages, members)],
        "What shoe size does Ben wear?",
        "What shoe size does Maya wear?",
    )
    assert theirs.status == "answered", theirs.reason
    assert any("42.5" in c.excerpt for c in theirs.chat)
    assert nobody.status == "no_answer" and "Maya" in nobody.reason
    assert any("42.5" in c.excerpt for c in nobody.nearest)


def test_a_chinese_question_about_a_member_no_passage_is_by_or_about_is_refused(tmp_path):
    members = [
        {"senderRef": "kf", "displayName": "飞签客服-小雨"},
        {"senderRef": "zhao", "displayName": "赵律师"},
        {"senderRef": "li", "displayName": "李总"},
    ]
    messages = [
        chat("f1", "kf", "2026-06-11T11:10:00+08:00", "@赵律师 您那边用的是专业版吧？接口权限要专业版才有"),
        chat("f2", "zhao", "2026-06-11T11:14:00+08:00", "对 我们律所买的套餐是专业版"),
        chat("f3", "li", "2026-06-12T10:30:00+08:00", "企业认证一直卡在对公打款这一步"),
        chat("f4", "kf", "2026-06-12T10:37:00+08:00", "3 天内在认证页面回填打款金额就行"),
    ]
    theirs, nobody = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages, members)],
        "赵律师的律所用的是哪个套餐",
        "李总的律所用的是哪个套餐",
    )
    assert theirs.status == "answered", theirs.reason
    assert nobody.status == "no_answer" and "李总" in nobody.reason


def test_a_count_is_answered_by_a_number_of_the_things_asked_for(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# 门锁手册\n\n## 录入指纹\n\n每个手指按 6 次。一把锁最多保存 100 个指纹。\n\n"
        "## 开门方式\n\n指纹、密码、NFC 卡；Z7 Pro 另外支持人脸识别。\n",
        encoding="utf-8",
    )
    fingerprints, faces = ingest_and_ask(tmp_path, [docs], "一把锁最多能存多少个指纹", "门锁能录入多少张人脸")
    assert fingerprints.status == "answered", fingerprints.reason
    assert any("100 个指纹" in c.excerpt for c in fingerprints.documents)
    assert faces.status == "no_answer" and "number" in faces.reason


def test_the_dense_side_agrees_by_how_far_a_passage_stands_out_not_by_its_rank(kb):
    hit = retrieve(kb.store, kb.embedder, "what is the gate code", 3, now=NOW).hits[0]
    spread = [(f"low-{i}", 0.5 + 0.001 * i) for i in range(40)]
    fourth = [("a", 0.95), ("b", 0.94), ("c", 0.93), (hit.chunk.id, 0.92), *spread]
    assert standout(fourth, hit.chunk.id) > AGREEMENT_STANDOUT
    assert agrees(kb.store, Retrieval([hit], fourth, []), hit)
    # Second of many near-equal candidates: in the top ranks, yet not standing out of them.
    level = [("a", 0.81), (hit.chunk.id, 0.80), *[(f"near-{i}", 0.79) for i in range(35)]]
    level += [(f"far-{i}", 0.1) for i in range(5)]
    assert standout(level, hit.chunk.id) < AGREEMENT_STANDOUT
    assert not agrees(kb.store, Retrieval([hit], level, []), hit)


def test_a_version_question_is_answered_only_by_a_section_stating_a_version(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lock.md").write_text(
        "# 门锁手册\n\n## 固件升级\n\n最新固件版本为 V2.7.3，在 App 的设备页面点击升级。\n", encoding="utf-8"
    )
    (docs / "gateway.md").write_text(
        "# 网关手册\n\n## 升级\n\n网关固件版本可以在 App 里查看和升级，升级时不要断电。\n", encoding="utf-8"
    )
    lock, gateway = ingest_and_ask(tmp_path, [docs], "门锁最新固件是哪个版本", "网关固件是哪个版本")
    assert lock.status == "answered", lock.reason
    assert any("V2.7.3" in c.excerpt for c in lock.documents)
    assert gateway.status == "no_answer" and "version" in gateway.reason


def test_a_duration_in_years_needs_a_passage_stating_one(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lock.md").write_text(
        "# 门锁手册\n\n## 保修\n\n门锁整机保修 2 年，电池不在保修范围内。\n", encoding="utf-8"
    )
    (docs / "gateway.md").write_text(
        "# 网关手册\n\n## 售后\n\n网关提供保修服务，凭购买凭证到售后点办理。\n", encoding="utf-8"
    )
    lock, gateway = ingest_and_ask(tmp_path, [docs], "门锁保修几年", "网关保修几个月")
    assert lock.status == "answered", lock.reason
    assert gateway.status == "no_answer" and "duration" in gateway.reason


def test_a_when_question_needs_a_time_or_a_date_or_a_past_event_in_chat(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(
        "# Office handbook\n\n## Front door\n\nThe front door opens with a badge from 7:30 on weekdays.\n\n"
        "## Fire drill\n\nThe fire drill is announced by the office manager; everyone leaves by the stairs.\n",
        encoding="utf-8",
    )
    messages = [
        chat("d1", "amy", "2026-05-11T09:00:00+00:00", "I repaired the bike room lock, the key is at reception"),
        chat("d2", "ben", "2026-05-11T09:05:00+00:00", "great, thanks for repairing the bike room lock"),
    ]
    bundle = write_bundle(tmp_path / "bundle", messages)
    door, drill, repaired = ingest_and_ask(
        tmp_path,
        [docs, bundle],
        "what time does the front door open with a badge",
        "when is the fire drill",
        "when was the bike room lock repaired",
    )
    assert door.status == "answered", door.reason
    assert drill.status == "no_answer" and "time or date" in drill.reason
    # The message's time dates what it reports.
    assert repaired.status == "answered", repaired.reason


def test_a_chinese_when_needs_a_time_but_when_one_should_asks_for_a_condition(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "news.md").write_text("# 新品动态\n\n## 新款门锁\n\n新款门锁即将上市，敬请期待。\n", encoding="utf-8")
    (docs / "battery.md").write_text("# 电池说明\n\n## 更换电池\n\n电量低于 20% 时需要更换电池。\n", encoding="utf-8")
    (docs / "service.md").write_text("# 售后服务\n\n## 上门安装\n\n上门安装在下单后 3 天内完成。\n", encoding="utf-8")
    launch, battery, install = ingest_and_ask(
        tmp_path, [docs], "新款门锁什么时候上市", "什么时候需要更换电池", "上门安装什么时候完成"
    )
    assert launch.status == "no_answer" and "time or date" in launch.reason
    assert battery.status == "answered", battery.reason
    assert install.status == "answered", install.reason  # a time from now: "下单后 3 天内"


def test_a_question_nobody_answered_is_no_answer(tmp_path):
    messages = [
        chat("q1", "lena", "2026-05-10T16:00:00+00:00", "does anyone know if the rooftop terrace is open on weekends?"),
        chat("q2", "tom", "2026-05-12T09:15:00+00:00", "the kitchen door sticks, any idea?"),
        chat("q3", "host", "2026-05-12T09:20:00+00:00", "lift the handle first, then push the kitchen door"),
    ]
    weekends, door = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages)],
        "is the rooftop terrace open on weekends",
        "the kitchen door sticks",
    )
    assert weekends.status == "no_answer" and "nobody answered" in weekends.reason
    assert any("open on weekends" in c.excerpt for c in weekends.nearest)
    assert door.status == "answered", door.reason


def test_message_times_say_how_long_something_took_not_how_long_it_takes(tmp_path):
    messages = [
        chat("l1", "he", "2026-05-13T09:15:00+08:00", "lift 2 is stuck on floor 12 and shows E-35"),
        chat("l2", "zhang", "2026-05-13T09:18:00+08:00", "E-35 is the door lock circuit, the lift company is coming"),
        chat("l3", "zhang", "2026-05-13T11:02:00+08:00", "lift 2 is repaired and running again"),
    ]
    took, takes = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages)],
        "how long did the lift 2 repair take",
        "how long does a lift repair take",
    )
    assert took.status == "answered", took.reason
    assert asked_types("电梯修了多久")[0].dated.search("电梯修了多久")  # 了 before the asking words: it took
    assert takes.status == "no_answer" and "duration" in takes.reason


def test_how_many_needs_a_number_of_the_things_asked_for_and_how_much_notice_is_no_price(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text(
        "# House rules\n\n## Quiet zone\n\nNo calls in the quiet zone on floor 3: use the phone booths.\n\n"
        "## Guests\n\nMembers may bring up to two guests a day.\n\n"
        "## Cancellation\n\nMonthly plans can be cancelled with 30 days' notice.\n",
        encoding="utf-8",
    )
    booths, guests, notice = ingest_and_ask(
        tmp_path,
        [docs],
        "how many phone booths are there in the quiet zone",
        "how many guests can members bring",
        "how much notice do I need to cancel a monthly plan",
    )
    assert booths.status == "no_answer" and "number" in booths.reason  # "floor 3" counts no booths
    assert guests.status == "answered", guests.reason
    assert notice.status == "answered", notice.reason
    users = count_value("how many users does the Pro plan allow")
    assert users.search("| Users | 10 |") and users.search("up to 10 users") and not users.search("users on floor 3")
    assert [kind.asked for kind in asked_types("how much is a day pass")] == ["a price"]
    assert asked_types("how much notice do I need") == []


def test_a_value_for_a_thing_no_passage_names_is_not_its_value(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fees.md").write_text(
        "# 收费标准\n\n## 停车\n\n地下固定车位月租 300 元；临时停车每小时 5 元。\n", encoding="utf-8"
    )
    underground, surface = ingest_and_ask(tmp_path, [docs], "地下车位月租多少钱", "地面车位月租多少钱")
    assert underground.status == "answered", underground.reason
    assert surface.status == "no_answer" and "地面" in surface.reason


def test_a_how_to_question_needs_a_passage_naming_its_action(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "app.md").write_text(
        "# 小程序常见问题\n\n## 绑定房屋\n\n首次使用需在「我的-房屋」里输入房号和手机号绑定房屋，审核后即可使用。\n",
        encoding="utf-8",
    )
    (docs / "wifi.md").write_text(
        "# Wifi\n\n## Members network\n\nThe wifi password for members is on the card by the kitchen door.\n",
        encoding="utf-8",
    )
    bind, unbind, change = ingest_and_ask(
        tmp_path, [docs], "小程序怎么绑定房屋", "小程序怎么解绑房屋", "how do I change the members wifi password"
    )
    assert bind.status == "answered", bind.reason
    assert unbind.status == "no_answer" and "解绑" in unbind.reason
    assert change.status == "no_answer" and "change" in change.reason
    # A verb that names no action of its own asks for whatever fixes the problem.
    assert action_asked("门禁卡失灵了怎么处理") == [] and action_asked("how do I fix the auto-belay") == []


def test_what_is_applied_for_is_the_action_a_how_to_question_asks_about(tmp_path):
    billing = "# 会员与账单\n\n## 发票\n\n会员购买后，在官网「我的订单」里点击申请发票，电子发票 1-3 天发到邮箱。\n"
    invoice, refund = ask_of_document(tmp_path, billing, "会员怎么申请发票", "会员怎么申请退款")
    assert invoice.status == "answered", invoice.reason
    assert refund.status == "no_answer" and "退款" in refund.reason
    assert action_asked("怎么申请退款") == ["退款"] and action_asked("如何进行备份") == ["备份"]


def test_a_chinese_who_or_which_question_needs_the_thing_it_turns_on(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(
        "# 业主手册\n\n## 分工\n\n小区的保洁由物业保洁部负责，电梯由维保公司负责。\n", encoding="utf-8"
    )
    cleaning, greenery = ingest_and_ask(tmp_path, [docs], "小区的保洁归谁管", "小区的绿化归谁管")
    assert cleaning.status == "answered", cleaning.reason
    assert greenery.status == "no_answer" and "绿化" in greenery.reason


def test_a_code_question_needs_a_passage_stating_the_code(tmp_path):
    messages = [
        chat("c1", "amy", "2026-05-14T10:00:00+00:00", "what is the code for the chalk cupboard?"),
        chat("c2", "ben", "2026-05-14T10:02:00+00:00", "the chalk cupboard code is 7321"),
        chat("c3", "cat", "2026-05-15T09:00:00+00:00", "where is the members wifi password?"),
        chat("c4", "dan", "2026-05-15T09:05:00+00:00", "the members wifi password is on the card by the kitchen door"),
    ]
    cupboard, wifi = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages)],
        "what is the chalk cupboard code",
        "what is the members wifi password",
    )
    assert cupboard.status == "answered", cupboard.reason
    assert wifi.status == "no_answer" and "code or password" in wifi.reason
    assert asked_types("虚位密码是什么") == []  # asks what a kind of password is, not for one


def test_a_feature_question_needs_the_feature_named_whole(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fees.md").write_text(
        "# 收费标准\n\n## 缴费方式\n\n物业费可以在小程序里用微信支付缴纳，充电棚支持扫码充电。\n", encoding="utf-8"
    )
    wechat, alipay, fast = ingest_and_ask(
        tmp_path, [docs], "物业费可以用微信支付交吗", "物业费可以用支付宝交吗", "充电棚支持快充吗"
    )
    assert wechat.status == "answered", wechat.reason
    assert alipay.status == "no_answer" and "支付宝" in alipay.reason  # 支付 of 微信支付 is no 支付宝
    assert fast.status == "no_answer" and "快充" in fast.reason


def test_which_plan_needs_a_plan_named_where_the_rest_of_the_question_is(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plans.md").write_text(
        "# Memberships\n\n## Plans\n\n- Day pass: 8am to 8pm.\n- Flex: 10 days a month.\n\n"
        "## Lockers\n\nThe Resident plan includes a locker.\n",
        encoding="utf-8",
    )
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as plans:
        plans.ingest(docs)
        locker = plans.ask("which plan includes a locker", now=NOW)
        parking = plans.ask("which plan includes parking", now=NOW)
    assert locker.status == "answered", locker.reason
    assert parking.status == "no_answer" and "plan" in parking.reason
    assert asked_types("What plans does Jon have after the networking event?") == []  # his intentions


def test_colloquial_asking_words_and_potential_complements_are_read_as_what_they_ask():
    # 啥 is 什么 and 咋 is 怎么: 啥版本 asks for a version as 什么版本 does.
    assert standard_question("李哥家的扫地机是啥版本") == "李哥家的扫地机是什么版本"
    assert [kind.asked for kind in asked_types(standard_question("李哥家的扫地机是啥版本"))] == ["a version"]
    assert standard_question("机器回不去充电了咋整") == "机器回不去充电了怎么办"
    # 怎么回事 asks; 连不上 is about 连 (a passage says 连到 / 连接), not about 不上.
    units = question_units(standard_question("扫地机连不上家里的wifi咋回事"))
    assert "连" in units and not units & {"回事", "怎么回事", "连不", "不上"}
    assert "装" in question_units("客户端装不上") and "不了" not in question_units("机器开不了机")


def test_a_duration_written_in_words_or_with_a_qualifier_answers_how_long(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text(
        "# 售后政策\n\n## 换新\n\n仓库收到旧机后三个工作日内发出新机。\n\n"
        "## 退货\n\n未拆封可无理由退货，运费由买家承担。\n",
        encoding="utf-8",
    )
    (docs / "reset.md").write_text(
        "# Quick start\n\n## Factory reset\n\nHold the reset pin for 15 seconds until the light blinks red.\n\n"
        "## Replacements\n\nWe ship replacements within 1-2 business days.\n",
        encoding="utf-8",
    )
    swap, refund, hold, ship = ingest_and_ask(
        tmp_path,
        [docs],
        "换新要等几天才发新机",
        "退货要等几天才退款",
        "how long do I hold the reset pin",
        "how long until replacements ship",
    )
    assert swap.status == "answered", swap.reason
    assert refund.status == "no_answer" and "duration" in refund.reason
    assert hold.status == "answered", hold.reason
    assert ship.status == "answered", ship.reason


def test_a_word_jieba_cut_across_a_word_the_store_holds_is_re_cut(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# 扫地机说明书\n\n## 充电\n\n充满电约需 4 小时，满电可连续清扫约 150 分钟。\n\n"
        "## 禁区\n\n在地图页可以画禁区，最多设置 10 个禁区。\n",
        encoding="utf-8",
    )
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as manual:
        manual.ingest(docs)
        # jieba cuts 满 / 电能 / 扫: no passage holds 电能, one holds 满电.
        assert resegmented("满电能扫多久", manual.store, SearchFilters()) == "满电 能扫多久"
        # 能设 is the modal 能 glued to 设.
        assert resegmented("能设几个禁区", manual.store, SearchFilters()) == "能 设几个禁区"
        # A word no passage holds whose neighbours are no content words stays what it is: 分贝 after 多少.
        assert resegmented("噪音有多少分贝", manual.store, SearchFilters()) == "噪音有多少分贝"
        lasts = manual.ask("满电能扫多久", now=NOW)
        zones = manual.ask("能设几个禁区", now=NOW)
        noise = manual.ask("扫地的时候噪音有多少分贝", now=NOW)
    assert lasts.status == "answered", lasts.reason
    assert zones.status == "answered", zones.reason
    assert noise.status == "no_answer"


def test_a_members_reply_stating_the_value_answers_a_question_about_them(tmp_path):
    members = [
        {"senderRef": "zhou", "displayName": "周女士"},
        {"senderRef": "li", "displayName": "李哥"},
        {"senderRef": "chen", "displayName": "陈同学"},
    ]
    messages = [
        chat("m1", "zhou", "2026-05-14T09:00:00+08:00", "我家是 X3 Pro，李哥你家的是哪款"),
        chat("m2", "li", "2026-05-14T09:12:00+08:00", "我的是 X3 标准版，集尘座是单买的"),
        chat("m3", "chen", "2026-05-15T10:00:00+08:00", "扫地机地图老是丢，每次都要重新建图"),
        chat("m4", "zhou", "2026-05-15T10:10:00+08:00", "升级固件以后扫地机地图会保存在云端"),
    ]
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as group:
        group.ingest(write_bundle(tmp_path / "bundle", messages, members))
        # 李哥家 is cut 李哥 / 哥家: 哥家 is no missing thing when 李哥 is in the store; 李哥's reply states an
        # edition, though it does not say 扫地机.
        li = group.ask("李哥家的扫地机是啥版本", now=NOW)
        chen = group.ask("陈同学家的扫地机是啥版本", now=NOW)
    assert li.status == "answered", li.reason
    assert any("标准版" in c.excerpt for c in li.chat)
    assert chen.status == "no_answer"


def test_how_high_or_big_needs_a_measurement_and_an_email_question_an_address(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# 扫地机说明书\n\n## 拖地\n\n水箱容量 300 毫升，出水量分低、中、高三档。\n\n"
        "## 越障\n\n遇到门槛时机器会减速，请保持门槛两侧干燥。\n",
        encoding="utf-8",
    )
    (docs / "contacts.md").write_text(
        "# Contacts\n\n## Support\n\nEmail support at help@lumo.example, replies within a day.\n\n"
        "## Engineering\n\nRaj leads the firmware team and answers in the community chat.\n",
        encoding="utf-8",
    )
    tank, sill, support, raj = ingest_and_ask(
        tmp_path,
        [docs],
        "水箱多大",
        "扫地机能爬多高的门槛",
        "what is the support email",
        "what is the engineering team's email",
    )
    assert tank.status == "answered", tank.reason
    assert sill.status == "no_answer" and "measurement" in sill.reason
    assert support.status == "answered", support.reason
    assert raj.status == "no_answer" and "email" in raj.reason
    # 多长时间 asks for a duration, 多大年纪 for an age: neither is a measurement.
    assert [kind.asked for kind in asked_types("充满电要多长时间")] == ["a duration"]
    assert "a measurement" not in [kind.asked for kind in asked_types("他多大年纪")]


def test_can_it_connect_to_x_needs_x_named_whole(tmp_path):
    app = "# 扫地机 App\n\n## 配网\n\n扫地机只能连接 2.4G 的 wifi，不支持 5G 频段；连上以后可以在 App 里远程控制。\n"
    wifi, speaker = ask_of_document(tmp_path, app, "扫地机能连wifi吗", "扫地机能连小爱音箱吗")
    assert wifi.status == "answered", wifi.reason
    assert speaker.status == "no_answer" and "小爱" in speaker.reason


def test_a_value_in_a_named_unit_needs_a_number_in_that_unit(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# 电动车手册\n\n## 电池\n\n标配 48V 锂电池，续航约 65 公里，充满约需 6 小时。\n\n"
        "## Size\n\nThe scooter weighs 19 kg and folds to 110 cm.\n",
        encoding="utf-8",
    )
    volts, energy, kilos, pounds = ingest_and_ask(
        tmp_path,
        [docs],
        "电池是多少伏的",
        "电池充满一次要几度电",
        "what does the scooter weigh in kilograms",
        "what does the scooter weigh in pounds",
    )
    assert volts.status == "answered", volts.reason
    assert energy.status == "no_answer" and "度电" in energy.reason  # 65 公里 and 6 小时 are no energy
    assert kilos.status == "answered", kilos.reason
    assert pounds.status == "no_answer" and "pounds" in pounds.reason


def test_contractions_typed_without_the_apostrophe_and_negated_modals_name_no_topic():
    assert standard_question("descale reminder wont go away") == "descale reminder will not go away"
    assert standard_question("theres water under it, whats wrong") == "there is water under it, what is wrong"
    assert "won" not in question_units(standard_question("the app won't let me in"))
    assert question_units("能不能退款") == question_units("退款") == {"退款"}
    assert question_units("可不可以退款") == question_units("退款")


def test_a_thread_that_only_asks_lends_the_decision_no_closeness(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "app.md").write_text(
        "# Machine app\n\n## Schedule\n\nSet a wake-up time under Settings > Schedule and the machine heats up.\n",
        encoding="utf-8",
    )
    messages = [
        chat("k1", "priya", "2026-05-10T20:00:00+00:00", "does anyone know if it fits under kitchen cabinets?"),
        chat("k2", "jess", "2026-05-10T20:20:00+00:00", "wondering the same"),
    ]
    question = "will the machine fit under my kitchen cabinets"
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as owners:
        owners.ingest(write_bundle(tmp_path / "bundle", messages))
        owners.ingest(docs)
        retrieval = retrieve(owners.store, owners.embedder, question, 10, now=NOW, per_source=10)
        thread = next(hit for hit in retrieval.hits if hit.chunk.source_type == "chat")
        section = next(hit for hit in retrieval.hits if hit.chunk.source_type == "document")
        assert asks_only(thread)  # "wondering the same" joins the question, as 同问 does
        # The thread that only asks is by far the closest; of the rest, the section does not stand out.
        others = [(f"other-{i}", 0.45 + 0.01 * i) for i in range(12)]
        retrieval.dense = [(thread.chunk.id, 0.95), (section.chunk.id, 0.53), *others]
        assessment = assess(question, retrieval, owners.store)
    assert standout(retrieval.dense) > MIN_STANDOUT > assessment.features["standout"]
    assert not assessment.answerable and "nobody answered" in assessment.reason


def test_chat_said_in_the_time_a_question_names_is_weighed_among_what_was_said_then(kb, tmp_path):
    messages = [
        chat(f"p{i}", "mel", f"2026-0{month}-1{i}T10:00:00+00:00", text)
        for i, (month, text) in enumerate(
            [(3, "painted a lake at sunrise"), (3, "painted the old barn"), (4, "painted my dog"),
             (1, "went to the pottery class"), (1, "bought new brushes")]
        )
    ]  # fmt: skip
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as friends:
        friends.ingest(write_bundle(tmp_path / "bundle", messages))
        retrieval = retrieve(friends.store, friends.embedder, "what did Mel paint in April", 10, now=NOW)
        april = {chunk_id for chunk_id, _ in retrieval.window}
        chunks = friends.store.get_chunks(april)
        assert april and all(chunk.text.count("2026-04") for chunk in chunks.values())
        plain = retrieve(friends.store, friends.embedder, "what did Mel paint", 10, now=NOW)
        assert plain.window == []
    hit = retrieve(kb.store, kb.embedder, "what is the gate code", 3, now=NOW).hits[0]
    # Level with every other month's lines, yet standing out of what was said in the month named.
    level = [("a", 0.81), (hit.chunk.id, 0.80), *[(f"near-{i}", 0.79) for i in range(35)]]
    level += [(f"far-{i}", 0.1) for i in range(5)]
    window = [(hit.chunk.id, 0.80), ("w1", 0.5), ("w2", 0.49), ("w3", 0.48), ("w4", 0.5)]
    assert not agrees(kb.store, Retrieval([hit], level, []), hit)
    assert agrees(kb.store, Retrieval([hit], level, [], window=window), hit)


def test_which_model_needs_a_product_name_by_or_about_the_member_and_a_wechat_id_an_id(tmp_path):
    messages = [
        chat("w1", "leo", "2026-05-10T10:00:00+00:00", "mine's the Brava Duo in black, which one did you get Jess?"),
        chat("w2", "jess", "2026-05-10T10:06:00+00:00", "the Brava One, single boiler"),
        chat("w3", "priya", "2026-05-11T19:00:00+00:00", "app won't find the machine on my wifi"),
        chat("w4", "kai", "2026-05-11T19:05:00+00:00", "hold the steam and power buttons 3 seconds to pair"),
        chat("w5", "priya", "2026-05-11T19:30:00+00:00", "pairing mode did it, thanks"),
        chat("w6", "he", "2026-05-12T09:00:00+08:00", "电机插头拔下来吹干再插紧就好，有问题加我微信"),
        chat("w7", "zhao", "2026-05-12T09:30:00+08:00", "好的 谢谢老何"),
    ]
    members = {"leo": "Leo Grant", "jess": "Jess Hale", "priya": "Priya Nair", "kai": "Brava Tech (Kai)", "he": "老何"}
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as owners:
        people = [{"senderRef": ref, "displayName": name} for ref, name in members.items()]
        owners.ingest(write_bundle(tmp_path / "bundle", messages, members=people))
        leo = owners.ask("which model does Leo have", now=NOW)
        priya = owners.ask("which model does Priya have", now=NOW)
        wechat = owners.ask("老何的微信号是多少", now=NOW)
    assert leo.status == "answered", leo.reason
    # Her lines name the app and the machine, but no model: "Priya Nair:" is a speaker, not a product.
    assert priya.status == "no_answer" and "model" in priya.reason
    assert wechat.status == "no_answer" and "account ID" in wechat.reason


def test_a_name_of_several_words_must_be_held_whole_by_one_passage(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "shop.md").write_text(
        "# Shop\n\n## Colours\n\nThe grinder comes in matte black and white.\n\n"
        "## Contact\n\nEmail us Monday to Friday.\n\n## Sales\n\nSpring Sale: the grinder code is SPRING10.\n",
        encoding="utf-8",
    )
    black_friday, spring = ingest_and_ask(
        tmp_path, [docs], "what was the Black Friday grinder code", "what was the Spring Sale grinder code"
    )
    assert black_friday.status == "no_answer" and "Black Friday" in black_friday.reason
    assert spring.status == "answered", spring.reason


def test_a_chinese_what_kind_question_needs_the_kind_it_asks_for_but_what_it_means_is_no_kind(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# 电动车手册\n\n## 保修\n\n车架保修五年，电机保修三年。\n\n## 颜色\n\n车身有黑色和白色两种颜色。\n\n"
        "## 故障码\n\nE08：控制器过热，停车休息 15 分钟。\n",
        encoding="utf-8",
    )
    material, colour, code = ingest_and_ask(tmp_path, [docs], "车架是什么材质的", "车身有什么颜色", "E08是什么意思")
    assert material.status == "no_answer" and "材质" in material.reason
    assert colour.status == "answered", colour.reason
    assert code.status == "answered", code.reason  # 意思 asks what the code means: no thing a passage must name


def test_a_verbal_noun_no_passage_holds_is_a_thing_the_store_lacks(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "store.md").write_text(
        "# 门店服务\n\n## 服务\n\n门店提供免费检测，周六和周日照常营业。\n\n## 地址\n\n门店在人民路 88 号。\n",
        encoding="utf-8",
    )
    event, check = ingest_and_ask(tmp_path, [docs], "门店周六有什么活动", "门店周六有免费检测吗")
    assert event.status == "no_answer" and "活动" in event.reason  # 活动 is a verbal noun (jieba: vn)
    assert check.status == "answered", check.reason


def test_an_acronym_no_passage_holds_is_refused_and_a_how_to_needs_its_action_where_its_other_words_are(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {
        "ports": "# Ports\n\nThe base has two ethernet ports and a power socket.\n",
        "admins": "# Admin access\n\nInvite a second admin under Settings > Household.\n",
        "updates": "# Updates\n\nYou can change the update window under Settings > Updates.\n",
    }.items():
        (docs / f"{name}.md").write_text(text, encoding="utf-8")
    messages = [
        chat("h1", "chen", "2026-05-11T08:30:00+08:00", "主刷缠满了头发 拆不下来"),
        chat("h2", "tt", "2026-05-11T08:34:00+08:00", "主刷两端有黄色卡扣，往外一掰就能取出"),
    ]
    usb, ethernet, password, window, brush = ingest_and_ask(
        tmp_path,
        [docs, write_bundle(tmp_path / "bundle", messages)],
        "does the base have a USB port",
        "does the base have an ethernet port",
        "how do I change the admin password",
        "how do I change the update window",
        "主刷上全是头发 怎么拆下来",
    )
    assert usb.status == "no_answer" and "USB" in usb.reason
    assert ethernet.status == "answered", ethernet.reason
    # "change" is in the updates section, which says nothing of the admin password.
    assert password.status == "no_answer" and "change" in password.reason
    assert window.status == "answered", window.reason
    assert brush.status == "answered", brush.reason  # 拆不下来 is about 拆下来


def test_a_member_line_sharing_one_common_word_does_not_make_another_familys_passage_theirs(tmp_path):
    members = [
        {"senderRef": "le", "displayName": "乐乐妈妈"},
        {"senderRef": "zhang", "displayName": "张一诺妈妈"},
        {"senderRef": "wang", "displayName": "王老师"},
    ]
    messages = [
        chat("p1", "le", "2026-09-07T09:00:00+08:00", "我家乐乐报了周三的编程社团"),
        chat("p2", "zhang", "2026-09-03T12:30:00+08:00", "一诺的饭卡丢了，中午吃不了饭"),
        chat("p3", "wang", "2026-09-03T12:36:00+08:00", "让孩子带学生证去食堂二楼挂失补办"),
        chat("p4", "zhang", "2026-09-03T18:00:00+08:00", "新卡补好了，谢谢老师"),
    ]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "家长须知.md").write_text(
        "# 家长须知\n\n## 接送\n\n7:40 以后送孩子到校。\n\n## 午休\n\n孩子中午在教室午休。\n\n"
        "## 请假\n\n孩子病假要交证明。\n",
        encoding="utf-8",
    )
    theirs, nobody = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages, members), docs],
        "乐乐妈妈家孩子报了什么社团",
        "张一诺妈妈家孩子报了什么社团",
    )
    assert theirs.status == "answered", theirs.reason
    # 张一诺妈妈's thread holds 孩子 and nothing of the club: it is not about her child's club.
    assert nobody.status == "no_answer" and "张一诺妈妈" in nobody.reason


def test_how_much_and_how_many_ask_and_name_no_topic(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installing\n\n## Requirements\n\nDocker 24 or newer and 1 GB of memory.\n\n## Ports\n\n"
        "The web interface listens on 8080.\n",
        encoding="utf-8",
    )
    (answer,) = ingest_and_ask(tmp_path, [docs], "how much memory does it need")
    assert answer.status == "answered", answer.reason
    assert any("1 GB" in c.excerpt for c in answer.documents)


def test_a_name_only_an_unanswered_question_holds_is_refused_as_only_asked(tmp_path):
    members = [
        {"senderRef": "dara", "displayName": "Dara"},
        {"senderRef": "felix", "displayName": "Felix"},
        {"senderRef": "nina", "displayName": "Nina"},
    ]
    messages = [
        chat("k1", "dara", "2026-05-06T17:00:00+00:00", "anyone running this on a Raspberry Pi 3?"),
        chat("k2", "felix", "2026-05-06T17:30:00+00:00", "+1, also curious"),
        chat("k3", "felix", "2026-05-07T09:00:00+00:00", "what database are people on?"),
        chat("k4", "nina", "2026-05-07T09:05:00+00:00", "I run it on Postgres 16, no issues. sqlite is the default"),
    ]
    nobody, answered = ingest_and_ask(
        tmp_path,
        [write_bundle(tmp_path / "bundle", messages, members)],
        "does it run on a Raspberry Pi 3",
        "which Postgres version does Nina run",
    )
    assert nobody.status == "no_answer" and nobody.reason == ONLY_ASKED
    assert answered.status == "answered", answered.reason


def test_a_windows_release_written_short_answers_the_long_form() -> None:
    from threadkeep.answerability import named_terms, question_units

    assert "win7" in question_units("老的 Windows 7 电脑还能装哪个版本")
    assert "Windows" not in named_terms("老的 Windows 7 电脑还能装哪个版本")
