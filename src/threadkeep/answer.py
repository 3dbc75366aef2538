"""Answers computed by code: refusal, grouping by source and honest labels.

A language model may word the answer (see `generate`), but whether there is an
answer, which sources are cited, how documents and chat are kept apart and how
open or unconfirmed threads are labelled is decided here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime

from threadkeep.answerability import Assessment, citable
from threadkeep.model import Chunk, Hit
from threadkeep.text import content_tokens, is_me_too, is_noise, is_question
from threadkeep.threads.resolution import confirms

MAX_PER_GROUP = 3
MAX_NEAREST = 3
NOT_AN_ANSWER = "Not an answer: "
EXCERPT_LINES = 4
EXCERPT_CHARS = 160

MEDIA_NOTE = "The discussion includes an image/video whose content is not included here."
_TRANSCRIPT_LINE = re.compile(r"^\[(?P<when>[^\]]+)\] (?P<who>[^:]+): (?P<text>.*)$")


@dataclass(frozen=True, slots=True)
class Citation:
    chunk_id: str
    source_type: str
    source_ref: str
    title: str
    date: datetime  # a document's update time, a thread's last message
    label: str  # how to present it: where it comes from, when, and how sure it is
    excerpt: str
    score: float
    relevance: float | None
    heading_path: tuple[str, ...] | None = None
    evidence_ids: tuple[str, ...] | None = None
    resolution_state: str | None = None
    started_at: datetime | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "chunk_id": self.chunk_id,
            "source_type": self.source_type,
            "source_ref": self.source_ref,
            "title": self.title,
            "date": self.date.isoformat(),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "label": self.label,
            "excerpt": self.excerpt,
            "score": self.score,
            "relevance": self.relevance,
            "heading_path": list(self.heading_path) if self.heading_path is not None else None,
            "evidence_ids": list(self.evidence_ids) if self.evidence_ids is not None else None,
            "resolution_state": self.resolution_state,
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class Answer:
    question: str
    status: str  # "answered" | "no_answer"
    documents: list[Citation] = field(default_factory=list)
    chat: list[Citation] = field(default_factory=list)
    text: str = ""  # the extractive answer, complete without any model
    generated_text: str | None = None  # a model's wording of the same citations, when configured
    reason: str | None = None  # why there is no answer
    # The closest passages when there is no answer, each labelled "Not an answer: ...".
    nearest: list[Citation] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # e.g. "about_someone_else"

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "status": self.status,
            "reason": self.reason,
            "flags": list(self.flags),
            "groups": {
                "documents": [citation.to_dict() for citation in self.documents],
                "chat": [citation.to_dict() for citation in self.chat],
            },
            "nearest": [citation.to_dict() for citation in self.nearest],
            "text": self.text,
            "generated_text": self.generated_text,
        }


def chat_label(chunk: Chunk, conversation_title: str) -> str:
    where, day = conversation_title or chunk.source_ref, f"{chunk.occurred_at:%Y-%m-%d}"
    if chunk.resolution_state == "resolved":
        return f"Resolved in {where} on {day} (someone confirmed the fix worked)"
    if chunk.resolution_state == "workaround":
        return f"Suggested in {where} on {day}; unconfirmed: nobody reported whether it worked"
    return f"Reported in {where} on {day}, no conclusion at the time"


def document_label(chunk: Chunk) -> str:
    path = " › ".join(chunk.heading_path or (chunk.title,))
    return f"{path} (updated {chunk.occurred_at:%Y-%m-%d})"


def chat_excerpt(chunk: Chunk, question: str) -> str:
    """The opening message, the answer and its confirmation when there are some, then the lines closest
    to the question, in thread order."""
    spoken = []
    for index, line in enumerate(line for line in chunk.text.splitlines() if line.strip()):
        match = _TRANSCRIPT_LINE.match(line)
        who, said = (match["who"], match["text"]) if match else ("", line)
        if not is_noise(said):
            spoken.append((index, line, who, said))
    if len(spoken) <= EXCERPT_LINES:
        return "\n".join(_shorten(line) for _, line, _, _ in spoken)
    asker = spoken[0][2]
    wanted = set(content_tokens(question))

    def weight(item: tuple[int, str, str, str]) -> tuple[int, int]:
        _, _, who, said = item
        answers = who != asker and not is_question(said) and not is_me_too(said)
        return (2 * answers + 2 * confirms(said) + min(len(wanted & set(content_tokens(said))), 3), len(said))

    rest = sorted(spoken[1:], key=weight, reverse=True)[: EXCERPT_LINES - 1]
    return "\n".join(_shorten(line) for _, line, _, _ in sorted([spoken[0], *rest]))


def document_excerpt(chunk: Chunk) -> str:
    """The section's first lines (tables and lists keep their line breaks), cut on a line boundary."""
    body = chunk.text.split("\n\n", 1)[-1].strip()
    kept: list[str] = []
    for line in (line.rstrip() for line in body.splitlines()):
        if not line or set(line) <= set("|-: "):
            continue
        if kept and sum(map(len, kept)) + len(line) > EXCERPT_CHARS * 2:
            kept.append("…")
            break
        kept.append(_shorten(line, EXCERPT_CHARS * 2))
    return "\n".join(kept)


def _shorten(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def citation_of(hit: Hit, question: str, conversation_titles: dict[str, str], note: str | None = None) -> Citation:
    chunk = hit.chunk
    notes = (note,) if note else ()
    if chunk.source_type == "document":
        return Citation(
            chunk.id,
            "document",
            chunk.source_ref,
            chunk.title,
            chunk.occurred_at,
            document_label(chunk),
            document_excerpt(chunk),
            hit.score,
            hit.dense_score,
            heading_path=chunk.heading_path,
            notes=notes,
        )
    title = conversation_titles.get(chunk.source_ref, chunk.source_ref)
    return Citation(
        chunk.id,
        "chat",
        chunk.source_ref,
        title,
        chunk.occurred_at,
        chat_label(chunk, title),
        chat_excerpt(chunk, question),
        hit.score,
        hit.dense_score,
        evidence_ids=chunk.evidence_ids,
        resolution_state=chunk.resolution_state,
        started_at=chunk.started_at,
        notes=notes + ((MEDIA_NOTE,) if chunk.has_unresolved_media else ()),
    )


def build_answer(
    question: str,
    hits: list[Hit],
    conversation_titles: dict[str, str],
    assessment: Assessment,
    show_nearest: bool = False,
) -> Answer:
    """The answer `assessment` allows: grouped citations, or no answer with its reason and the nearest passages
    labelled as not an answer. `show_nearest` adds those passages to an answer too, in the same labelling."""
    answer = Answer(question=question, status="answered" if assessment.answerable else "no_answer")
    answer.flags = list(assessment.flags)
    if assessment.answerable:
        for hit in citable(question, hits, assessment):
            group = answer.documents if hit.chunk.source_type == "document" else answer.chat
            if len(group) < MAX_PER_GROUP:
                group.append(citation_of(hit, question, conversation_titles, assessment.notes.get(hit.chunk.id)))
    else:
        answer.reason = assessment.reason
    if not assessment.answerable or show_nearest:
        cited = {citation.chunk_id for citation in answer.documents + answer.chat}
        for hit in [hit for hit in hits if hit.chunk.id not in cited][:MAX_NEAREST]:
            citation = citation_of(hit, question, conversation_titles, assessment.notes.get(hit.chunk.id))
            answer.nearest.append(dataclasses.replace(citation, label=NOT_AN_ANSWER + citation.label))
    answer.text = render_text(answer)
    return answer


def _render_citation(citation: Citation) -> str:
    excerpt = "\n  ".join(citation.excerpt.splitlines())
    notes = "".join(f"\n  Note: {note}" for note in citation.notes)
    return f"- {citation.label}\n  {excerpt}{notes}"


def render_text(answer: Answer) -> str:
    """The extractive answer: documents and chat in separate sections, each source with its date; without an
    answer, the reason and the closest passages, labelled as not an answer."""
    parts: list[str] = []
    if answer.status == "no_answer":
        parts.append(f"No answer: {answer.reason or 'nothing in the knowledge base answers this question'}.")
    if answer.documents:
        parts.append("From the documents:")
        parts += [_render_citation(citation) for citation in answer.documents]
    if answer.chat:
        parts.append("From chat discussions:")
        parts += [_render_citation(citation) for citation in answer.chat]
    if answer.documents and answer.chat:
        parts.append("Documents and chat are shown separately with their dates; check which is more recent.")
    if answer.nearest:
        parts.append("Closest passages (not an answer to the question):")
        parts += [_render_citation(citation) for citation in answer.nearest]
    return "\n".join(parts)
