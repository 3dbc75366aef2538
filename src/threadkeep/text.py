"""Text utilities every stage shares: tokenization, noise detection, questions.

Tokenization must not depend on spaces: Chinese is segmented with jieba
(`rjieba`), English words are lower-cased and stemmed, and codes such as
`E1024`, `0x80070005` or `3.1.4` stay single tokens so they match exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

import rjieba

T = TypeVar("T")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORDLIKE = re.compile(r"\w", re.UNICODE)
_ASCII_WORD = re.compile(r"^[a-z]+$")

# Function words that carry no topic; kept out of overlap and full-text scores.
STOPWORDS: frozenset[str] = frozenset(
    """
    的 了 吗 呢 吧 啊 呀 哦 嗯 哈 么 嘛 是 在 有 和 与 或 也 都 就 还 又 很 太 这 那 这个 那个 这样 那样
    我 你 他 她 它 我们 你们 他们 大家 自己 一下 一个 一些 什么 怎么 怎么办 为什么 如何 哪 哪里 哪个 没 不
    把 被 给 对 从 到 让 用 说 会 能 要 想 看 可以 可能 应该 现在 然后 但是 因为 所以 如果 已经 还是 一直
    这边 那边 请问 问下 请 下 个 过 着
    a an and are as at be been but by can could did do does doing for from had has have he her him his how i if in into
    is it its just me my no not of on or our she so some than that the their them then there these they this to too
    was we were what when where which who why will with would you your yes ok okay im i'm it's dont don't can't cant
    get got any anyone there's here all also about up out one
    """.split()  # noqa: SIM905
)


@lru_cache(maxsize=1)
def _english_stemmer():
    # Imported on first use: without its C backend (PyStemmer, a dependency) the package loads every
    # language's stemmer, a tenth of a second that a query without an English word never needs.
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _english_stemmer().stemWord(word)


# Segments repeat (a chat says the same words over and over): normalizing each distinct one once
# makes tokenizing several times faster. Bounded, for a server that runs for months.
@lru_cache(maxsize=1 << 18)
def _normalize_token(raw: str) -> str | None:
    token = unicodedata.normalize("NFKC", raw).strip().lower()
    if not token or not _WORDLIKE.search(token):
        return None
    # A stop word stays as written: stemmed, some would escape the list ("does" -> "doe", "anyone" -> "anyon").
    if _ASCII_WORD.match(token) and len(token) > 3 and token not in STOPWORDS:
        return _stem(token)
    return token


def _is_content(token: str) -> bool:
    return token not in STOPWORDS and not (len(token) == 1 and token.isascii())


@lru_cache(maxsize=1 << 18)
def _content_token(raw: str) -> str | None:
    token = _normalize_token(raw)
    return token if token is not None and _is_content(token) else None


# Texts a per-text cache keeps: chat lines, not whole documents or pasted logs (bounded memory for a
# server that runs for months: at most this many characters per entry).
REMEMBERED_CHARS = 1000
REMEMBERED_TEXTS = 1 << 15


def remembered(function: Callable[[str], T]) -> Callable[[str], T]:
    """`function` of a text, remembered for the last `REMEMBERED_TEXTS` short texts (pure functions only)."""
    cached = lru_cache(maxsize=REMEMBERED_TEXTS)(function)

    @wraps(function)
    def call(text: str) -> T:
        return cached(text) if len(text) <= REMEMBERED_CHARS else function(text)

    return call


def tokenize(text: str) -> list[str]:
    """Words of `text` in order: Chinese segmented, English stemmed, codes kept whole."""
    return [token for token in map(_normalize_token, rjieba.cut_for_search(text)) if token is not None]


def content_tokens(text: str) -> list[str]:
    """Tokens that carry topic: `tokenize` without stop words and one-letter Latin tokens."""
    return [token for token in map(_content_token, rjieba.cut_for_search(text)) if token is not None]


# A message's text is segmented once: the thread stages read its set (utterances, topic rules,
# resumed threads), full text its tokens in order (`content_tokens_by_line`).
@remembered
def _remembered_tokens(text: str) -> tuple[str, ...]:
    return tuple(content_tokens(text))


@remembered
def token_set(text: str) -> frozenset[str]:
    """`content_tokens` of `text` as a set."""
    return frozenset(_remembered_tokens(text))


def content_tokens_by_line(text: str) -> list[str]:
    """`content_tokens(text)`, segmented a line at a time, a chat line's "name: " apart from what was said.

    The same tokens: the segmenter cuts at every character that is neither a CJK ideograph nor a
    letter, digit or one of `+#&._%-`, and never joins across one (a line break, ": "), and those
    characters alone are no tokens. So a chunk's lines reuse the segmentation of the messages they
    quote, made when they were threaded.
    """
    return [token for line in text.split("\n") for part in line.split(": ", 1) for token in _remembered_tokens(part)]


_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def cjk_bigrams(text: str) -> list[str]:
    """Chinese character bigrams: matching that does not depend on where jieba cuts (「一锁屏就停」 vs 「锁屏之后」)."""
    return [run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


# Short replies that acknowledge or agree without adding content. They stay in
# the transcript people read but never in what is embedded or indexed.
# fmt: off
NOISE_PHRASES: tuple[str, ...] = (
    "+1", "+2", "+10086", "1", "111", "同问", "同求", "我也是", "我也一样", "我也遇到了", "一样", "同",
    "收到", "收到了", "好的", "好滴", "好哒", "好", "嗯", "嗯嗯", "哦", "哦哦", "噢", "谢谢", "谢谢你",
    "谢谢大家", "多谢", "感谢", "感谢感谢", "谢啦", "辛苦了", "辛苦", "辛苦啦", "赞", "顶", "哈哈", "哈哈哈",
    "呵呵", "ok", "okay", "k", "kk", "thanks", "thank you", "thx", "ty", "lol", "+1 me too", "me too", "same",
    "same here", "got it", "noted", "np", "yw", "老师辛苦了", "明白", "明白了", "了解", "知道了",
)
# fmt: on
MAX_NOISE_CHARS = 40
_PLACEHOLDER = r"\[[^\]\n]{1,12}\]"  # [图片] [image] [表情]
_MENTION = r"@\S+"
_noise_pattern = re.compile(
    r"(?:"
    + "|".join([_PLACEHOLDER, _MENTION, *sorted((re.escape(p) for p in NOISE_PHRASES), key=len, reverse=True)])
    + r"|[\s\W_])*",
    re.IGNORECASE | re.UNICODE,
)


@remembered  # asked again by every stage, see `threads.cues`
def is_noise(text: str) -> bool:
    """True when `text` only acknowledges (「+1 我也是」, 收到, 👍, ？？, [图片]) and says nothing new."""
    stripped = text.strip()
    if not stripped:
        return True
    if len(stripped) > MAX_NOISE_CHARS:
        return False
    return _noise_pattern.fullmatch(stripped) is not None


_ME_TOO = re.compile(
    r"^\s*(?:\+1|同问|同求|我也是|我也一样|我也(?:老|总|经常|一直)?(?:报|出现|遇到|碰到)|我这也|我这边也|我们也|一样的"
    r"|me too|same here|same)",
    re.I,
)


def is_me_too(text: str) -> bool:
    """「+1 我也是 华为 mate60」, 「同问 vivo 也是」, 「我也老报 E1024」: someone joining another person's report."""
    return bool(_ME_TOO.match(text))


_QUESTION_WORDS_ZH = re.compile(
    r"吗|么[？?]?$|怎么|如何|为什么|为啥|啥|哪|是不是|有没有|能不能|可不可以|会不会|要不要|咋|多少|几[个点天次]|请问|求助|求教"
)
_QUESTION_WORDS_EN = re.compile(
    r"^(?:\S+[:,]\s*)?(?:how|what|why|where|when|which|who|whom|is|are|does|do|did|can|could|should|would|will|has|have|anyone|anybody)\b",
    re.IGNORECASE,
)


@remembered  # asked again by every stage, see `threads.cues`
def is_question(text: str) -> bool:
    stripped = text.strip()
    if not stripped:
        return False
    if "?" in stripped or "？" in stripped:
        return True
    if has_cjk(stripped):
        return bool(_QUESTION_WORDS_ZH.search(stripped))
    return bool(_QUESTION_WORDS_EN.match(stripped))
