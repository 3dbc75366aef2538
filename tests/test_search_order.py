"""The order of hits on a real SQLite store: several chats before many hits of one, and the time a
question names. The hash embedder stands in for the model: neither behaviour depends on it."""

from __future__ import annotations

from datetime import UTC, datetime

from conftest import message
from threadkeep.api import KnowledgeBase
from threadkeep.search import SearchSettings
from threadkeep.store import SearchFilters

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
OFF = SearchSettings(repeat_factor=1.0, off_time_factor=1.0)


def assistant_chat(ref: str, day: str, turns: list[tuple[str, str]]) -> list[dict]:
    """One assistant conversation on `day`: (user turn, reply) pairs a minute apart."""
    out = []
    for index, (asked, replied) in enumerate(turns):
        at = f"{day}T10:{index:02d}"
        out.append(message(f"{ref}:{2 * index}", "user", 0, asked, conversation=ref, sentAt=f"{at}:00+00:00"))
        out.append(message(f"{ref}:{2 * index + 1}", "assistant", 0, replied, conversation=ref, sentAt=f"{at}:30Z"))
    return out


def open_kb(bundle_factory, hash_embedder, talk: list[dict]) -> KnowledgeBase:
    refs = list(dict.fromkeys(item["conversationRef"] for item in talk))
    bundle = bundle_factory(talk, conversations=[{"conversationRef": ref, "kind": "assistant"} for ref in refs])
    kb = KnowledgeBase.open(bundle.parent / "kb.db", hash_embedder)
    kb.ingest(bundle)
    return kb


def sources(hits) -> list[str]:
    return [hit.chunk.source_ref for hit in hits]


def test_a_second_chat_on_the_topic_is_not_pushed_out_by_more_exchanges_of_the_first(bundle_factory, hash_embedder):
    bread = [
        ("how often do I feed my sourdough starter", "Feed the sourdough starter daily at room temperature."),
        ("my sourdough starter smells sour, is it fine", "A sour sourdough starter is fine, feed it."),
        ("can I keep the sourdough starter in the fridge", "Yes, feed the sourdough starter weekly then."),
        ("what flour for the sourdough starter", "Rye flour makes the sourdough starter lively."),
    ]
    talk = assistant_chat("baking", "2026-05-30", bread)
    sold = ("I sold bread from my sourdough starter", "A good starter shows.")
    talk += assistant_chat("market", "2026-05-30", [sold])
    # Chats the question barely touches, as a real store has: the weakest candidates of each list.
    talk += assistant_chat("cat", "2026-05-30", [("feeding the cat twice a day", "Cats like a routine.")])
    talk += assistant_chat("garden", "2026-05-30", [("when to water the garden", "Early in the morning.")])
    with open_kb(bundle_factory, hash_embedder, talk) as kb:
        question = "sourdough starter feeding"
        plain = kb.search(question, k=3, now=NOW, settings=OFF)
        mixed = kb.search(question, k=3, now=NOW)
        everything = kb.search(question, k=10, now=NOW, settings=OFF)
    assert sources(plain) == ["baking"] * 3  # without it, one chat fills the top
    assert "market" in sources(mixed)
    assert sources(mixed)[0] == "baking"  # the best hit stays first
    # Only the mix of chats changes: each chat's own hits keep their order, scores are untouched.
    baking_order = [hit.chunk.id for hit in everything if hit.chunk.source_ref == "baking"]
    assert [hit.chunk.id for hit in mixed if hit.chunk.source_ref == "baking"] == baking_order[:2]
    scores = {hit.chunk.id: hit.score for hit in everything}
    assert all(hit.score == scores[hit.chunk.id] for hit in mixed)


def test_a_ranking_within_one_chat_keeps_its_order(bundle_factory, hash_embedder):
    talk = assistant_chat(
        "one",
        "2026-05-30",
        [(f"question {i} about the proxy setting", f"answer {i}: the proxy is under network") for i in range(6)],
    )
    with open_kb(bundle_factory, hash_embedder, talk) as kb:
        question = "where is the proxy setting"
        assert [h.chunk.id for h in kb.search(question, k=6, now=NOW)] == [
            h.chunk.id for h in kb.search(question, k=6, now=NOW, settings=OFF)
        ]


def test_chat_from_the_time_a_question_names_comes_first(bundle_factory, hash_embedder):
    said = ("which router did I buy", "You bought a mesh router.")
    talk = assistant_chat("then", "2026-05-18", [said]) + assistant_chat("lately", "2026-05-31", [said])
    with open_kb(bundle_factory, hash_embedder, talk) as kb:
        assert sources(kb.search("which router did I buy", k=2, now=NOW))[0] == "lately"  # newer first
        assert sources(kb.search("which router did I buy two weeks ago", k=2, now=NOW))[0] == "then"
        assert sources(kb.search("which router did I buy on 18 May 2026", k=2, now=NOW))[0] == "then"
        assert sources(kb.search("which router did I buy two weeks ago", k=2, now=NOW, settings=OFF))[0] == "lately"


def test_chat_from_the_named_time_is_found_when_other_times_fill_the_candidates(bundle_factory, hash_embedder):
    said = ("the invoice number for the printer", "It is on the first page of the invoice.")
    # Said in March in more words, so it is a weaker candidate than each of May's.
    talk = assistant_chat("march", "2026-03-10", [("so where was the invoice number for that printer we got", said[1])])
    for day in range(20, 31):
        talk += assistant_chat(f"may-{day}", f"2026-05-{day}", [said])
    few = SearchSettings(candidates=3)
    with open_kb(bundle_factory, hash_embedder, talk) as kb:
        question = "the invoice number for the printer in March"
        unread = SearchSettings(candidates=3, off_time_factor=1.0)
        assert "march" not in sources(kb.search(question, k=3, now=NOW, settings=unread))
        assert sources(kb.search(question, k=3, now=NOW, settings=few))[0] == "march"
        # A filter still bounds what is searched: the named time only narrows within it.
        scoped = SearchFilters(since=datetime(2026, 5, 1, tzinfo=UTC))
        assert "march" not in sources(kb.search(question, k=3, filters=scoped, now=NOW, settings=few))


def _docs_and_chat(tmp_path, bundle_factory, hash_embedder, section: str, told: str) -> KnowledgeBase:
    """A manual with `section` among unrelated ones, and a two-month-old group chat where `told` was said."""
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    others = "\n\n".join(f"## Topic {n}\n\nThe badge reader on floor {n} opens at eight." for n in range(4))
    (docs / "manual.md").write_text(f"# Manual\n\n## Scanning\n\n{section}\n\n{others}\n", encoding="utf-8")
    talk = [
        message("q", "ann", 0, told, conversation="office", sentAt="2026-04-01T10:00:00+00:00"),
        message("a", "bob", 0, "re-enter the mail password on the printer", conversation="office",
                sentAt="2026-04-01T10:03:00+00:00"),
        message("x", "cy", 0, "lunch is at noon today", conversation="office", sentAt="2026-04-01T12:00:00+00:00"),
    ]  # fmt: skip
    kb = KnowledgeBase.open(tmp_path / "kb.db", hash_embedder)
    kb.ingest(docs)
    kb.ingest(bundle_factory(talk))
    return kb


def test_the_closer_source_leads_the_interleaved_hits(tmp_path, bundle_factory, hash_embedder):
    question = "scan to email fails on the big printer"
    # Each source's scores are scaled over its own candidates, so both best hits score about 1 and the
    # chat one is decayed by age: the lead must come from comparing them on one scale.
    with _docs_and_chat(tmp_path, bundle_factory, hash_embedder, "Scanned pages are kept a week.", question) as kb:
        hits = kb.search(question, per_source=2, now=NOW)
        assert [hit.chunk.source_type for hit in hits] == ["chat", "document", "chat", "document"][: len(hits)]
    with _docs_and_chat(tmp_path / "b", bundle_factory, hash_embedder, question + ": check the mail server.",
                        "the printer jams") as kb:  # fmt: skip
        assert kb.search(question, per_source=2, now=NOW)[0].chunk.source_type == "document"
