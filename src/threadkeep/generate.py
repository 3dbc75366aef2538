"""Optional wording of an answer by a model behind an OpenAI-compatible endpoint.

The model only rewords: it receives the grouped citations the code already chose
and a fixed rule; refusal, grouping and labels stay as `answer.py` decided.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx

from threadkeep.answer import Answer
from threadkeep.errors import GenerationError

RULE = (
    "You answer from the sources below only. Present the documents and the chat discussions in separate "
    "sections, each statement with its source's date. Do not merge them into one verdict and do not choose "
    "between them for the user. Keep every label as given: a thread marked 'no conclusion' is not a fix, and "
    "'unconfirmed' suggestions stay unconfirmed. Mention notes about images or videos that were not read, and "
    "say so when a note marks a source as being about someone other than the person asked about. "
    "Answer in the language of the question."
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0

    @classmethod
    def from_environment(cls) -> Endpoint | None:
        base_url, model = os.environ.get("THREADKEEP_LLM_BASE_URL"), os.environ.get("THREADKEEP_LLM_MODEL")
        if not base_url or not model:
            return None
        return cls(base_url, model, os.environ.get("THREADKEEP_LLM_API_KEY"))


def sources_prompt(answer: Answer) -> str:
    lines = [f"Question: {answer.question}", ""]
    for name, group in (("Documents", answer.documents), ("Chat discussions", answer.chat)):
        if group:
            lines.append(f"{name}:")
            for number, citation in enumerate(group, start=1):
                lines.append(f"[{name[0]}{number}] {citation.label}")
                lines.extend(f"    {line}" for line in citation.excerpt.splitlines())
                lines.extend(f"    Note: {note}" for note in citation.notes)
            lines.append("")
    return "\n".join(lines)


def generate(answer: Answer, endpoint: Endpoint) -> str:
    """The model's wording of `answer`; raises GenerationError when the endpoint fails."""
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    body = {
        "model": endpoint.model,
        "temperature": 0,
        "messages": [{"role": "system", "content": RULE}, {"role": "user", "content": sources_prompt(answer)}],
    }
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=endpoint.timeout)
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"]).strip()
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as error:
        raise GenerationError(f"the answer model at {endpoint.base_url} failed: {error}") from error
