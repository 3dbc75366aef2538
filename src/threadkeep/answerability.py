"""Whether the retrieved evidence answers a question, decided from the evidence itself.

No single cosine separates answerable from unanswerable questions across models,
languages and chunk types, so the decision reads what was retrieved:

- the question's codes (error codes, versions, identifiers such as `redirect_uri` or `WebDAV`)
  must occur in the store, and in the passages found: a code that appears nowhere is a "no";
- each question word is weighted by how few passages of the store hold it; when most of that
  weight is in words no passage holds, the store lacks the topic ("no message or section
  mentions 退款");
- a question asking for a price, a duration, a time or date, a version, a plan, a phone number, an email
  address, a code or password, a measurement or how many needs a passage about its subject that states one
  (for a count, with the thing counted: 多少张 is not answered by "100 个指纹"); asked of one chat member, a
  passage by or about them (their reply stating it is cited);
- the question is read with colloquial asking words standardised (啥 -> 什么, 咋 -> 怎么) and re-cut where
  jieba cut across a word the store holds (满电能扫 -> 满电 能扫); a potential complement is its verb (装不上);
  "much" and "many" ask, as 多少 does, and name no topic;
- a question about one chat member needs a passage by or about them among those covering its other
  words, and covering them at least half as well as the best passage does (what Ben said of his shoe size
  does not answer a question about Maya's; her line sharing one common word, 孩子, is not about her child's club);
- a chat thread that only asks (every line a question, an acknowledgement or a "me too") answers nothing, and
  lends the decision no closeness; a name of the question only such a thread holds is held by no passage
  that could answer;
- a name of several words ("Black Friday") must stand whole in one passage, an acronym (USB) somewhere;
- a question naming a unit (多少伏, "in decibels") needs a number in that unit; a model or a messaging ID asked
  for needs one stated (speaker names are no value);
- a value stated for something the question's qualifier does not name is not its value (地面车位 when only
  地下车位 has a rent); a Chinese who / which / what-kind question needs the noun it turns on somewhere; a "does it
  support X" question needs X named whole; a how-to needs its action (解绑, "change") in a passage covering
  its other words; a code or password, a plan and an English count need the value itself ("the password is
  on the card" states none, "floor 3" counts no phone booths); how long something takes needs a stated
  duration, while how long something took may be read from a thread's message times;
- a top passage must hold enough of the weighted words, and the dense side must agree (its cosine a
  standard deviation above the other candidates', or above the other lines of the time the question
  names), or the best dense score must stand out from
  them (in standard deviations of the store's own scores for this query, not as a cosine, and not
  as a rank, whose meaning changes with the store's size);
- when the question names one speaker and the lines closest to it were said by the other
  speaker, about themselves, the passages are noted as being about someone else.

The constants were chosen by `benchmarks/answerability.py` on the tuning split only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import rjieba

from threadkeep.answer_types import CODE, MIN_SUBJECT, AnswerType, asked_types, standard_question
from threadkeep.model import Hit
from threadkeep.search import Retrieval
from threadkeep.store import SearchFilters, Store
from threadkeep.store.rows import input_hash
from threadkeep.text import STOPWORDS, content_tokens, has_cjk, is_me_too, is_noise, is_question, tokenize

# Chosen on the tuning split by benchmarks/answerability.py (see benchmarks/README.md).
MIN_COVERAGE = 0.25  # share of the question's words, weighted by rarity, found in one top passage
MIN_STANDOUT = 2.0  # or else: best cosine, in standard deviations above the other dense candidates
MAX_ABSENT = 0.65  # share of the question's weight in words no passage holds: above it, the store lacks the topic
DOUBTFUL_ABSENT = 0.6  # above this share, the best dense score must stand out clearly ...
CLEAR_STANDOUT = 3.0  # ... by this many standard deviations
# The dense side agrees with a passage full text found when its cosine lies this many standard deviations
# above the other candidates' (a share of the store's own scores for this query, whatever the store's size).
AGREEMENT_STANDOUT = 1.0
AGREEMENT_RANKS = 3  # without enough dense candidates for a spread, or a vector: among the first 3
CITED_SHARE = 0.5  # a cited passage scores at least this share of its source's best
EVIDENCE_HITS = 3  # passages of each source read for coverage and speakers
SUBJECT_SHARE = 0.5  # a member's passage covers at least this share of what the best passage covers
MIN_SPEAKER_OVERLAP = 2  # question words a line must share to count as the line the question is about
RARITY_CAP = 100  # passages counted per question word when weighing it
ABSENT_WEIGHT = float(np.log(RARITY_CAP + 1) + 1.0)  # the weight of a word no passage holds

_NAME = re.compile(r"(?<![\w'])[A-Z][a-z]+(?:'s)?(?![\w])")
_NAME_RUN = re.compile(r"(?<![\w'])[A-Z][a-z]+(?: [A-Z][a-z]+)+(?:'s)?(?![\w])")
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*)([A-Z][a-z]+)")
_TIMESTAMP = re.compile(r"^\[[^\]\n]+\] ", re.M)  # a transcript line's time, which is no phone number
# A transcript line's time and speaker: a display name ("Brava Support (Lena)", "user2024") states no value.
_LINE_HEAD = re.compile(r"^\[[^\]\n]+\] [^:\n]+: ", re.M)
_TRANSCRIPT_LINE = re.compile(r"^\[(?P<when>[^\]]+)\] (?P<who>[^:]+): (?P<text>.*)$")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "  # noqa: SIM905
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
# Dates are in a chat message's timestamp, not its text: a question's date words and numbers are no topic
# a passage must hold.
_DATE_TOKENS = frozenset(content_tokens(" ".join(_CALENDAR)))
_TITLES = frozenset({"Dr", "Mr", "Mrs", "Ms", "Prof", "St"})
_CLOCK = frozenset({"AM", "PM", "OK"})  # capitals that name no thing
_NAME_PIECES = re.compile(r"[-—_·/()（）|]+")
_DEMONYM_ENDINGS = ("ean", "ian", "ese", "ish", "can")
ABOUT_SOMEONE_ELSE = "about_someone_else"
ONLY_ASKED = "the passages found on this question only ask it; nobody answered"
# jieba part-of-speech tags of Chinese words that carry a topic: nouns, verbs, adjectives, distinguishing
# words, idioms, abbreviations (adverbs, numerals, pronouns, conjunctions and particles do not).
_CONTENT_TAGS = frozenset("nvabijlz")
# A verb's potential complement says whether the action succeeds, not what it is: 装不上 is about 装 (安装), 连不上
# about 连 (连接), 回不去 about 回; a 不了 jieba cuts off on its own (开 / 不了 / 机) carries no topic.
_COMPLEMENT = re.compile(r"^(?P<verb>[\u4e00-\u9fff])[不得](?:了|上|到|动|开|出|进|住|起|来|去|下|掉|成|着|见)$")
_POTENTIAL = re.compile(r"([\u4e00-\u9fff])[不得]([了上到动开出进住起来去下掉成着])")
_BARE_COMPLEMENTS = frozenset("不" + complement for complement in "了上到动开出进住起来去下掉成着")
# Chinese ways of asking that jieba tags as idioms or nouns: they ask, and name no topic a passage must hold.
_ASKING_WORDS = frozenset({"怎么回事", "回事", "怎么办", "什么意思", "意思", "多长时间"})
# English quantifiers that ask ("how much memory", "how many users"), as 多少 does: no topic a passage must hold.
_ASKING_TOKENS = frozenset(content_tokens("much many"))
_GREETINGS = ("hey", "hi", "hello", "thanks", "thank you", "dear", "oh", "wow", "yes", "yeah", "congrats")


@dataclass(slots=True)
class Assessment:
    answerable: bool
    reason: str | None = None  # why not, in words a user reads
    missing_terms: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    # chunk id -> a note for that passage (e.g. it is what someone else said)
    notes: dict[str, str] = field(default_factory=dict)
    features: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)  # question unit -> rarity weight
    # The question as the decision read it: colloquial asking words standardised, re-cut where jieba's cut held
    # a word no passage holds (what `citable` reads the weights against).
    question: str = ""
    # Passages the decision found stating the answer in other words (a member's reply giving the asked value).
    stating: list[str] = field(default_factory=list)


def codes(question: str) -> list[str]:
    """Error codes, versions and identifiers: strings a passage either contains or does not answer."""
    return list(dict.fromkeys(match.group(0) for match in CODE.finditer(question)))


def names(question: str) -> list[str]:
    """Capitalised words inside an English sentence: people, places, products."""
    terms = []
    starts = {match.group(1) for match in _SENTENCE_START.finditer(question)}
    for match in _NAME.finditer(question):
        word = match.group(0).removesuffix("'s")
        if match.group(0) in starts or word in starts or word.lower() in STOPWORDS or word.lower() in _CALENDAR:
            continue
        terms.append(word)
    return [term for term in dict.fromkeys(terms) if term not in codes(question)]


def name_phrases(question: str) -> list[str]:
    """Runs of two or more capitalised words inside an English sentence ("Black Friday", "Apple Watch")."""
    starts = {match.start(1) for match in _SENTENCE_START.finditer(question)}
    phrases = []
    for match in _NAME_RUN.finditer(question):
        words = match.group(0).split()
        if match.start() in starts:
            words = words[1:]
        words = [word.removesuffix("'s") for word in words]
        if len(words) >= 2 and not any(word.lower() in STOPWORDS for word in words):
            phrases.append(" ".join(words))
    return phrases


def _term_tokens(term: str) -> set[str]:
    return set(content_tokens(term))


# A Windows release is written long or short ("Windows 7", "Win 7", "win7"): one unit either way.
_WINDOWS = re.compile(r"\bwin(?:dows)?\s*(7|8\.1|8|10|11|xp|vista)\b", re.IGNORECASE)


def _releases(text: str) -> str:
    return _WINDOWS.sub(lambda match: f"win{match.group(1).lower()}", text)


def _text_units(text: str) -> set[str]:
    """Words (stemmed) and, for Chinese, single characters and character pairs: matching that does not
    depend on where the word segmenter cuts."""
    text = _releases(text)
    units = set(content_tokens(text))
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
        units.update(run)
        units.update(run[i : i + 2] for i in range(len(run) - 1))
    return units


def _chinese_units(word: str) -> list[str]:
    """A Chinese content word as the words it is made of (指纹识别 -> 指纹, 识别; 保修卡 -> 保修, 卡), so that
    a passage saying 识别不出来 holds 识别; a long word without parts as character pairs, a short one as itself."""
    if len(word) <= 2:
        return [word]
    parts = [part for part in rjieba.cut_for_search(word) if 2 <= len(part) < len(word)]
    if not parts:
        return [word[i : i + 2] for i in range(len(word) - 1)]
    # A character no part covers still carries meaning: 保修卡 is 保修 and 卡.
    return parts + [char for char in word if not any(char in part for part in parts)]


def negated_function_word(word: str) -> bool:
    """A function word negated or asked both ways (不能, 没有, 能不能, 可不可以): it asks, and names no topic."""
    plain = re.sub(r"^(.)[不没]\1", r"\1", word)
    plain = plain.removeprefix("不").removeprefix("没")
    return plain != word and plain in STOPWORDS


def question_units(question: str) -> set[str]:
    """The question's topic words: Latin words stemmed (dates and bare numbers left out); Chinese content
    words (nouns, verbs, adjectives..., not adverbs, numerals, pronouns or particles) by their parts."""
    units: set[str] = set()
    for word, tag in rjieba.tag(_releases(question)):
        if not has_cjk(word):
            units.update(
                token
                for token in content_tokens(word)
                if token not in _DATE_TOKENS | _ASKING_TOKENS and not token.isdigit()
            )
        elif (
            tag[:1] in _CONTENT_TAGS
            and word not in STOPWORDS
            and word not in _ASKING_WORDS | _BARE_COMPLEMENTS
            and not negated_function_word(word)
        ):
            complement = _COMPLEMENT.match(word)
            units.update([complement["verb"]] if complement else _chinese_units(word))
    return units


def resegmented(question: str, store: Store, filters: SearchFilters, hits: list[Hit] = ()) -> str:
    """The question re-cut where jieba joined a character to the wrong neighbour: 满电能扫多久 is cut 满 / 电能 / 扫,
    and when no passage holds 电能 but one holds 满电, the question is read as 满电 能扫多久 (a space between); a
    modal glued to its verb (能设 of 能设几个禁区) is cut off it."""
    if not has_cjk(question):
        return question
    texts = [hit.chunk.indexed_text or hit.chunk.text for hit in hits]

    def held(unit: str) -> bool:
        return any(unit in text for text in texts) or bool(store.lexical_candidates(unit, 1, filters))

    def held_word(pair: str) -> bool:
        # The moved character must make a word, not any pair a passage happens to hold (请退 of 请退出).
        return rjieba.cut(pair) == [pair] and held(pair)

    def topical(word: str, tag: str) -> bool:
        return has_cjk(word) and tag[:1] in _CONTENT_TAGS and word not in STOPWORDS

    # Only a character of a neighbouring content word moves: 的 / 多少 glue to anything (的工, 少分 are in many
    # passages), 满 of 满电 does not.
    words = rjieba.tag(question)
    cuts = []
    start = 0
    for i, (word, tag) in enumerate(words):
        end = start + len(word)
        if len(word) == 2 and topical(word, tag) and not held(word):
            before = words[i - 1] if i else ("", "")
            after = words[i + 1] if i + 1 < len(words) else ("", "")
            if (topical(*before) and held_word(before[0][-1] + word[0])) or (
                topical(*after) and held_word(word[1] + after[0][0])
            ):
                cuts.append(start + 1)
            elif tag.startswith("v") and word[0] in STOPWORDS:
                cuts.append(start + 1)  # a modal glued to its verb: 能设 is 能 设
        start = end
    for cut in reversed(cuts):
        question = f"{question[:cut]} {question[cut:]}"
    return question


def absent_nouns(question: str, weights: dict[str, float]) -> list[str]:
    """Chinese nouns of the question with a part (two characters or more) that no passage holds: 指静脉 when
    no message or section says 静脉."""
    found = []
    for word, tag in rjieba.tag(question):
        if has_cjk(word) and (tag.startswith("n") or tag == "vn") and word not in STOPWORDS:
            parts = [unit for unit in _chinese_units(word) if len(unit) >= 2]
            if any(weights.get(unit, 0.0) >= ABSENT_WEIGHT for unit in parts):
                found.append(word)
    return found


def named_terms(question: str) -> list[str]:
    """Words naming a thing the store must mention for the question to be answerable: Latin words inside a
    Chinese question (Zigbee, HomeKit, Apple Watch) and names inside an English one (Synology, Rockies)."""
    question = _releases(question)
    if has_cjk(question):
        # Short Latin words in Chinese text are mostly units and generic acronyms (KB, APP, NAS), not names.
        words = re.findall(r"(?<![A-Za-z0-9_.-])[A-Za-z]{4,}(?![A-Za-z0-9_])", question)
        found = [word for word in words if word.lower() not in STOPWORDS]
    else:
        # Titles and words for peoples name no one thing: "European countries" is answered by "Spain".
        found = [name for name in names(question) if name not in _TITLES and not name.endswith(_DEMONYM_ENDINGS)]
        # An acronym names a thing too (USB, NFC, VPN); 4 capitals or more are codes already.
        found += [word for word in re.findall(r"(?<![\w'-])[A-Z]{2,3}(?![\w'-])", question) if word not in _CLOCK]
        # A name of several words names one thing, which one passage holds whole: "Black Friday" is not
        # answered by "matte black" and "Monday to Friday".
        found += [phrase for phrase in name_phrases(question) if phrase.split()[0] not in _TITLES]
    return [word for word in dict.fromkeys(found) if not any(word in code for code in codes(question))]


def coverage(question: str, hit: Hit, weights: dict[str, float] | None = None) -> float:
    """The share of the question's units found in the passage, each unit weighted (by rarity) when given."""
    wanted = question_units(question)
    if not wanted:
        return 0.0
    found = wanted & _text_units(hit.chunk.indexed_text or hit.chunk.text)
    weight = weights or {}
    total = sum(weight.get(unit, 1.0) for unit in wanted)
    return sum(weight.get(unit, 1.0) for unit in found) / total


def written_forms(question: str) -> dict[str, str]:
    """Each stemmed Latin token of the question -> the word as written."""
    words = re.findall(r"[A-Za-z0-9]+(?:[_'.-][A-Za-z0-9]+)*", question)
    return {token: word for word in words for token in content_tokens(word)}


def rarity(store: Store, question: str, filters: SearchFilters, hits: list[Hit] = ()) -> dict[str, float]:
    """A weight per question unit from how many passages hold it (up to RARITY_CAP): rare units weigh most.
    The retrieved `hits` count too: full text indexes Chinese by words and character pairs, so a single
    character (擦) it cannot look up may still stand in a passage found."""
    # Full text stems what it is given: look a stemmed word up by the word as written.
    written = written_forms(question)
    texts = [_text_units(hit.chunk.indexed_text or hit.chunk.text) for hit in hits]
    weights = {}
    for unit in question_units(question):
        passages = len(store.lexical_candidates(written.get(unit, unit), RARITY_CAP, filters))
        passages = passages or sum(unit in units for units in texts)
        weights[unit] = float(np.log((RARITY_CAP + 1) / (passages + 1)) + 1.0)
    # A part no passage holds that shares a character with a part passages do hold, of the same word, is
    # another cut of those characters, not a missing thing: 哥家 of 李哥家 when 李哥 is in the store. It weighs
    # nothing.
    for word in dict.fromkeys(word for word, _ in rjieba.tag(question) if has_cjk(word) and len(word) > 2):
        parts = [unit for unit in _chinese_units(word) if len(unit) >= 2 and unit in weights]
        held = [unit for unit in parts if weights[unit] < ABSENT_WEIGHT]
        for unit in parts:
            if weights[unit] >= ABSENT_WEIGHT and any(set(unit) & set(other) for other in held):
                weights[unit] = 0.0
    return weights


def top_hits(hits: list[Hit]) -> list[Hit]:
    """The first EVIDENCE_HITS hits of each source, in their order."""
    seen: dict[str, int] = {}
    chosen = []
    for hit in hits:
        seen[hit.chunk.source_type] = seen.get(hit.chunk.source_type, 0) + 1
        if seen[hit.chunk.source_type] <= EVIDENCE_HITS:
            chosen.append(hit)
    return chosen


def standout(dense: list[tuple[str, float]], chunk_id: str | None = None) -> float:
    """How many standard deviations the best cosine (or `chunk_id`'s) lies above the candidates' after the
    best; 0 with fewer than 3 candidates, minus infinity for a chunk that is no candidate."""
    if len(dense) < 3:
        return 0.0
    scores = np.array([score for _, score in dense], dtype=np.float64)
    rest = scores[1:]
    score = scores[0] if chunk_id is None else dict(dense).get(chunk_id, -np.inf)
    return float((score - rest.mean()) / max(rest.std(), 1e-6))


def states(
    question: str, kind: AnswerType, evidence: list[Hit], weights: dict[str, float], named: list[str] = ()
) -> bool:
    """Whether a passage states a value of the asked kind (a price, a version) for what the question is
    about: it holds such a value, at least half the rarity weight of the question's other words, and every
    thing the question names (`named`: its codes and names). A thread giving Rust's version does not give
    freetype's, however many of the question's other words it holds."""
    subject = question_units(kind.asking.sub(" ", question))
    names = [_term_tokens(name) for name in named]
    total = sum(weights.get(unit, 1.0) for unit in subject)
    dated = kind.dated is not None and kind.dated.search(question) is not None
    for hit in evidence:
        # A document's value must be in the section about the subject (a price list does not price what
        # the next section merely names); a thread is one block, its reply need not repeat the subject.
        # A thread's message times say how long something took and when what it reports happened.
        timed = dated and hit.chunk.source_type == "chat"
        text = _TIMESTAMP.sub("", hit.chunk.text)
        blocks = re.split(r"\n(?=#)", text) if hit.chunk.source_type == "document" else [text]
        where = " ".join((hit.chunk.title, *(hit.chunk.heading_path or ())))
        for block in (f"{where}\n{block}" for block in blocks):
            chat = hit.chunk.source_type == "chat"
            said = _LINE_HEAD.sub("", hit.chunk.text) if chat else block
            if not timed and not kind.value.search(said):
                continue
            units = _text_units(block)
            if not all(tokens <= units for tokens in names):
                continue
            found = subject & units
            needed = kind.dated_subject if timed else kind.chat_subject if chat else MIN_SUBJECT
            if not subject or sum(weights.get(unit, 1.0) for unit in found) >= needed * total:
                return True
    return False


def agrees(store: Store, retrieval: Retrieval, hit: Hit) -> bool:
    """Whether the retrievers that could see `hit` rank it near the top: its cosine stands out of the dense
    candidates (a top dense passage when there are too few to tell), or, for a passage without a vector yet
    (embedding runs behind ingest), a top full-text passage."""
    # Chat said in the time the question names is weighed among what was said then: "what did she paint last
    # June" is about June's lines, however close other months' lines come.
    if len(retrieval.window) >= 3 and standout(retrieval.window, hit.chunk.id) >= AGREEMENT_STANDOUT:
        return True
    if len(retrieval.dense) >= 3 and hit.chunk.id in dict(retrieval.dense):
        return standout(retrieval.dense, hit.chunk.id) >= AGREEMENT_STANDOUT
    if any(chunk_id == hit.chunk.id for chunk_id, _ in retrieval.dense[:AGREEMENT_RANKS]):
        return True
    if hit.dense_rank is not None:
        return False
    if input_hash(hit.chunk.embedding_input) in store.embeddings_for(hit.chunk.source_ref):
        return False
    return any(chunk_id == hit.chunk.id for chunk_id, _ in retrieval.lexical[:AGREEMENT_RANKS])


def occurs_in_store(store: Store, term: str, filters: SearchFilters) -> bool:
    wanted = _term_tokens(term)
    if not wanted:
        return True
    found = store.lexical_candidates(term, 5, filters)
    chunks = store.get_chunks(chunk_id for chunk_id, _ in found)
    if " " in term.strip() and not has_cjk(term):
        # A name of several words is held as written, its words side by side ("Black Friday").
        phrase = re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, term.split())) + r"(?!\w)", re.I)
        return any(phrase.search(chunk.text) for chunk in chunks.values())
    return any(wanted <= set(content_tokens(chunk.indexed_text)) for chunk in chunks.values())


def _speaker_lines(hit: Hit) -> list[tuple[str, str]]:
    lines = []
    for line in hit.chunk.text.splitlines():
        match = _TRANSCRIPT_LINE.match(line)
        if match:
            lines.append((match["who"].strip(), match["text"]))
    return lines


def mentions(text: str, person: str) -> bool:
    """Whether `text` speaks about `person`; addressing them ("Thanks, Caroline!") is speaking to them."""
    for match in re.finditer(rf"\b{re.escape(person)}\b", text, re.I):
        before, after = text[: match.start()].rstrip(), text[match.end() :].lstrip()
        addressed = (not before or before[-1] in ",!.?" or before.lower().endswith(_GREETINGS)) and (
            not after or after[0] in ",!.?;:"
        )
        if not addressed:
            return True
    return False


def someone_else(question: str, hits: list[Hit]) -> dict[str, str]:
    """Notes for passages whose lines closest to the question were said by another speaker than the one
    the question is about, and do not mention that person; empty when the question names no single speaker."""
    evidence = [hit for hit in top_hits(hits) if hit.chunk.source_type == "chat"]
    speakers = {who for hit in evidence for who, _ in _speaker_lines(hit)}
    first_names = {who.split()[0]: who for who in speakers if who}
    named = [name for name in names(question) if name in first_names]
    if len(set(named)) != 1:
        return {}
    person = named[0]
    wanted = question_units(question) - _term_tokens(person)
    best: list[tuple[int, str, str, str]] = []  # (overlap, chunk id, speaker, text)
    for hit in evidence:
        for who, said in _speaker_lines(hit):
            overlap = len(wanted & _text_units(said))
            if overlap:
                best.append((overlap, hit.chunk.id, who, said))
    top = max((item[0] for item in best), default=0)
    if top < MIN_SPEAKER_OVERLAP:
        return {}
    closest = [item for item in best if item[0] == top]
    if any(who.split()[0] == person or mentions(said, person) for _, _, who, said in closest):
        return {}
    notes = {}
    for _, chunk_id, who, _ in closest:
        notes.setdefault(chunk_id, f"About someone else: this is what {who} said; the question asks about {person}.")
    return notes


def name_parts(display: str) -> set[str]:
    """How a question may name a chat member: a Latin given name ("Ben" of "Ben Hart", "Kim" of "Front desk
    (Kim)"), a Chinese name after the organisation ("安安" of "栖安客服-安安") or before a role ("小陈" of "小陈HR")."""
    pieces = [piece for piece in _NAME_PIECES.split(display) if piece]
    parts = {display.strip()}
    for piece in pieces[-1:] if len(pieces) > 1 else pieces:
        if has_cjk(piece):
            run = re.match(r"[\u3400-\u4dbf\u4e00-\u9fff]+", piece)
            parts.update(name for name in (piece, run.group(0) if run else "") if len(name) >= 2)
    first = display.split()[0] if display.split() else ""
    if first[:1].isupper() and not has_cjk(first) and all(word[:1].isupper() for word in pieces[0].split()):
        parts.add(first)
    if len(pieces) > 1 and not has_cjk(pieces[-1]) and pieces[-1][:1].isupper():
        parts.add(pieces[-1])
    # A Latin part names someone when capitalised: "user" and "assistant" are roles.
    return {part for part in parts if len(part) >= 2 and (has_cjk(part) or part[:1].isupper())}


def _names_in(question: str, part: str) -> bool:
    if has_cjk(part):
        return part in question
    return re.search(rf"(?<![\w]){re.escape(part)}(?![\w])", question) is not None


def person_asked(question: str, speakers: set[str]) -> tuple[str, set[str]] | None:
    """The one chat member the question names, with the ways of writing their name; None when it names
    no member or several ("Which city have both Jean and John visited?")."""
    named = {}
    for display in speakers:
        parts = name_parts(display)
        if any(_names_in(question, part) for part in parts):
            named[display] = parts
    return next(iter(named.items())) if len(named) == 1 else None


# Joining a question in English without a "me too" ("wondering the same", "also wondering"): it asks too.
_WONDERING = re.compile(r"\s*(?:i'?m |i was |also |just )*wondering (?:the same|that too|too|as well)\b", re.I)


def asks_only(hit: Hit) -> bool:
    """Whether a chat passage only asks: each of its lines a question, an acknowledgement or a "me too". A
    question nobody answered holds the question's words and answers nothing."""
    lines = _speaker_lines(hit) if hit.chunk.source_type == "chat" else []
    return bool(lines) and all(
        is_question(said) or is_noise(said) or is_me_too(said) or _WONDERING.match(said) for _, said in lines
    )


# How a question asks for a procedure, and the verbs that name no action of their own ("how do I fix it",
# 怎么处理): the action is the verb after them.
_HOW_TO = re.compile(
    r"\bhow (?:do|can|could|should|would) (?:i|we|you|one) (?P<en>[a-z]+)|\bhow to (?P<to>[a-z]+)"
    r"|(?:怎么|如何|怎样)(?:才能|才|能|可以|去|来)?(?P<zh>[\u4e00-\u9fff]+)",
    re.I,
)
# Verbs whose object is the action asked for (申请退款, 办理退货, 进行备份, 开通自动续费).
_LIGHT_VERBS = frozenset(["申请", "办理", "进行", "开通", "提交", "发起"])
_GENERIC_ACTIONS = frozenset(content_tokens("fix solve handle deal do get give make use stop work")) | frozenset(
    ["办", "弄", "搞", "做", "整", "用", "处理", "解决", "操作", "回事", "样"]
)


def action_asked(question: str) -> list[str]:
    """The action a how-to question asks to be described ("change" of "how do I change the wifi password",
    解绑 of 小程序怎么解绑房屋), as question units; empty for other questions and for generic verbs."""
    match = _HOW_TO.search(question)
    if match is None:
        return []
    if match["zh"]:
        words = rjieba.tag(match["zh"])
        verb = next((word for word, tag in words[:1] if tag.startswith("v")), "")
        if verb in _LIGHT_VERBS and len(words) > 1 and words[1][1][:1] in ("v", "n"):
            verb = words[1][0]  # 申请退款 asks how to get a refund: the action is what is applied for
        units = _chinese_units(verb) if verb and verb not in _GENERIC_ACTIONS else []
    else:
        units = content_tokens(match["en"] or match["to"])
    return [unit for unit in units if unit not in _GENERIC_ACTIONS and unit not in STOPWORDS]


# Questions asking to pick one person or thing, or what kind of thing: the passages name the candidates, and
# the condition the choice turns on must be in them ("which plan includes parking" when no passage mentions
# parking; 车架是什么材质 when no passage mentions 材质, 多了什么功能 when none mentions 功能; 什么时候 asks for
# a time or a condition, which other rules read). English paraphrases too freely for this ("Which classical
# musicians does Melanie enjoy listening to?" is answered by a line naming Bach and Mozart); Chinese nouns are
# matched by their parts.
_CHOICE = re.compile(r"谁|哪家|哪位|哪个|哪款|哪种|哪一|什么(?!时候|时间)")


def choice_unnamed(question: str, weights: dict[str, float]) -> list[str]:
    """The nouns of a Chinese who / which / what question that no passage holds (小区的绿化归谁管 with no 绿化), not
    counting the words asking for a value (哪个版本 asks for a version, which the version rule reads)."""
    if not _CHOICE.search(question):
        return []
    subject = question
    for kind in asked_types(question):
        subject = kind.asking.sub(" ", subject)
    return absent_nouns(subject, weights)


# A question whether something supports or works with a feature, an app or a way of paying names it whole:
# 支持快充吗, 可以用支付宝交吗, 能连小爱同学吗 ("支付" of 微信支付 is no 支付宝), "does the kiosk support Apple Pay"
# ("work with" is left out: "Who did John work with to raise funds" asks about people).
_FEATURE_ASKED = re.compile(
    r"(?:支持|兼容|(?:能|可以|能不能|可不可以)(?:用|连接|连|接入|接|配合))(?P<zh>[^吗么？?，,。]+)(?:吗|么)"
    r"|\b(?:supports?|compatible with)\b (?P<en>[^?.,]+)",
    re.I,
)


def feature_unnamed(question: str, store: Store, filters: SearchFilters) -> list[str]:
    """The words of the feature a "does it support X" question asks about that no passage holds whole."""
    match = _FEATURE_ASKED.search(question)
    if match is None:
        return []
    if match["zh"]:
        words = [word for word, tag in rjieba.tag(match["zh"]) if len(word) >= 2 and tag[:1] in _CONTENT_TAGS]
    else:
        words = [word for word in re.findall(r"[A-Za-z][\w-]*", match["en"]) if content_tokens(word)]
    return [word for word in words if word not in STOPWORDS and not occurs_in_store(store, word, filters)]


def action_missing(question: str, evidence: list[Hit], weights: dict[str, float]) -> str | None:
    """The action a how-to question asks about when no passage covering its other words names it: a section
    saying where the descaler is, or how to bind an account, describes no way to unbind one."""
    action = action_asked(question)
    if not action:
        return None
    # The other words the store holds, without the action: "you can change the update window" covers "change"
    # of "how do I change the admin password" and nothing of the admin password.
    rest = {unit for unit in question_units(question) - set(action) if weights.get(unit, 0.0) < ABSENT_WEIGHT}
    total = sum(weights.get(unit, 1.0) for unit in rest)
    for hit in evidence:
        text = hit.chunk.indexed_text or hit.chunk.text
        units = _text_units(text)
        held = sum(weights.get(unit, 1.0) for unit in rest & units)
        # A potential complement names the action it says fails: 拆不下来 is about 拆下来.
        done = set(action) <= units | _text_units(_POTENTIAL.sub(r"\1\2", text))
        if done and (not rest or held >= MIN_COVERAGE * total):
            return None
    return "".join(action) if has_cjk(action[0]) else " ".join(action)


def involves(hit: Hit, speaker: str, parts: set[str]) -> bool:
    """Whether a passage is by or about a member: one of its lines was said by them or names them."""
    lines = _speaker_lines(hit)
    if any(who.strip() == speaker for who, _ in lines):
        return True
    texts = [said for _, said in lines] if lines else [hit.chunk.text]
    return any(_names_in(text, part) for text in texts for part in parts)


def chat_speakers(store: Store, retrieval: Retrieval) -> set[str]:
    """The members who speak in the chat passages either retriever found."""
    ids = [chunk_id for chunk_id, _ in retrieval.dense + retrieval.lexical]
    chunks = list(store.get_chunks(ids).values()) + [hit.chunk for hit in retrieval.hits]
    return {
        match["who"].strip()
        for chunk in chunks
        if chunk.source_type == "chat"
        for match in map(_TRANSCRIPT_LINE.match, chunk.text.splitlines())
        if match
    }


def about_nobody_found(
    question: str, retrieval: Retrieval, store: Store, evidence: list[Hit], weights: dict[str, float]
) -> str | None:
    """The member a question is about when no passage covering its other words is by or about them: what
    a passage says of one person does not answer a question about another (Maya's shoe size is not Ben's)."""
    asked = person_asked(question, chat_speakers(store, retrieval))
    if asked is None:
        return None
    speaker, parts = asked
    rest = question
    for part in sorted(parts, key=len, reverse=True):
        rest = re.sub(rf"{re.escape(part)}(?:'s)?", " ", rest)
    if not question_units(rest):
        return None
    shares = {hit.chunk.id: coverage(rest, hit, weights) for hit in evidence}
    covering = [hit for hit in evidence if shares[hit.chunk.id] >= MIN_COVERAGE]
    # The member's passage must be about the rest of the question as much as the best passage is, within a
    # factor: a line of theirs sharing one common word (孩子) does not make another family's club theirs.
    best = max(shares.values(), default=0.0)
    if not covering or any(
        involves(hit, speaker, parts) and shares[hit.chunk.id] >= SUBJECT_SHARE * best for hit in covering
    ):
        return None
    if member_statements(question, speaker, parts, evidence):
        return None
    return min(parts, key=len)


def member_statements(question: str, speaker: str, parts: set[str], evidence: list[Hit]) -> list[Hit]:
    """The passages by or about the member a value question names that state a value of each asked kind: they
    are about the question whatever words they use ("我的是 X3 标准版" answers 李哥家的扫地机是什么版本)."""
    kinds = asked_types(question)
    if not kinds:
        return []
    return [
        hit
        for hit in evidence
        if involves(hit, speaker, parts)
        and all(kind.value.search(_LINE_HEAD.sub("", hit.chunk.text)) for kind in kinds)
    ]


def assess(question: str, retrieval: Retrieval, store: Store, filters: SearchFilters | None = None) -> Assessment:
    filters = filters or SearchFilters()
    hits = retrieval.hits
    question = resegmented(standard_question(question), store, filters, hits)
    terms = codes(question)
    # A speaker's name need not occur in what they said.
    speakers = {who.split()[0] for hit in hits for who, _ in _speaker_lines(hit) if who}
    # Nor is a run of capitalised words holding one a single name ("Is Oscar Melanie's pet?").
    wanted = terms + [name for name in named_terms(question) if not set(name.split()) & speakers]
    missing = [term for term in wanted if not occurs_in_store(store, term, filters)]
    if not hits:
        reason = f"no message or section mentions {', '.join(missing)}" if missing else None
        return Assessment(False, reason or "nothing in the knowledge base matches this question", missing)
    # A thread that only asks the question holds its words and answers nothing.
    found = top_hits(hits)
    asked = [hit for hit in found if asks_only(hit)]
    evidence = [hit for hit in found if hit not in asked]
    weights = rarity(store, question, filters, hits)
    if not evidence or max(coverage(question, hit, weights) for hit in evidence) < MIN_COVERAGE <= max(
        (coverage(question, hit, weights) for hit in asked), default=0.0
    ):
        reason = ONLY_ASKED
        if missing:
            reason = f"no message or section mentions {', '.join(missing)}"
        return Assessment(False, reason, missing)
    best_coverage = max(coverage(question, hit) for hit in evidence)
    weighted = max(coverage(question, hit, weights) for hit in evidence)
    covering = max(evidence, key=lambda hit: coverage(question, hit, weights))
    absent = [unit for unit, weight in weights.items() if weight >= ABSENT_WEIGHT]
    features = {
        # A thread that only asks is no evidence, however close its words: the best cosine that counts is
        # the best of the others.
        "standout": standout([item for item in retrieval.dense if item[0] not in {hit.chunk.id for hit in asked}]),
        "coverage": best_coverage,
        "weighted_coverage": weighted,
        "absent_share": sum(weights[unit] for unit in absent) / sum(weights.values()) if weights else 0.0,
        "covering_agrees": float(agrees(store, retrieval, covering)),
        "terms": float(len(terms)),
        "missing": float(len(missing)),
    }
    # The words asking for a value (版本 of 什么版本, 费用) are no thing the store must name.
    asked_subject = question
    for kind in asked_types(question):
        asked_subject = kind.asking.sub(" ", asked_subject)
    features["absent_noun"] = float(bool(absent_nouns(asked_subject, weights)))
    features["absent_chinese_words"] = float(sum(has_cjk(unit) and len(unit) >= 2 for unit in absent))
    if missing:
        named = ", ".join(missing)
        return Assessment(False, f"no message or section mentions {named}", missing, features=features)
    # A name only a thread that asks holds ("Raspberry Pi" of an unanswered "anyone running this on a
    # Raspberry Pi 3?") is held by no passage that could answer.
    if asked and any(
        _names_in(hit.chunk.text, name)
        and not any(_names_in(other.chunk.indexed_text or other.chunk.text, name) for other in evidence)
        for name in wanted
        if not CODE.fullmatch(name)
        for hit in asked
    ):
        features["named_only_asked"] = 1.0
        return Assessment(False, ONLY_ASKED, features=features)
    # Before the values: what Ben said of his plan states a plan, but not Maya's.
    person = about_nobody_found(question, retrieval, store, evidence, weights)
    if person is not None:
        features["about_nobody_found"] = 1.0
        return Assessment(False, f"no passage found on this question is by or about {person}", features=features)
    # A value asked of one member is stated by or about them: the edition 李哥 gave is not 陈同学's.
    member = person_asked(question, chat_speakers(store, retrieval))
    valued = [hit for hit in evidence if involves(hit, *member)] if member else evidence
    for kind in asked_types(question):
        # A value stated for the thing without the question's qualifier is not its value: 地下车位's rent
        # does not answer 地面车位月租多少钱.
        elsewhere_nouns = absent_nouns(kind.asking.sub(" ", question), weights)
        if elsewhere_nouns:
            features["typed_absent_noun"] = 1.0
            named = ", ".join(elsewhere_nouns)
            reason = f"the question asks for {kind.asked} for {named}, and no message or section mentions {named}"
            return Assessment(False, reason, features=features)
        if not states(question, kind, valued, weights, wanted):
            features["answer_type_missing"] = 1.0
            reason = f"the question asks for {kind.asked} and no passage found states one for it"
            return Assessment(False, reason, features=features)
    unnamed = choice_unnamed(question, weights)
    if unnamed:
        features["choice_absent"] = 1.0
        named = ", ".join(unnamed)
        reason = f"the question asks who, which or what, and no message or section mentions {named}"
        return Assessment(False, reason, features=features)
    feature = feature_unnamed(question, store, filters)
    if feature:
        features["feature_unnamed"] = 1.0
        return Assessment(False, f"no message or section mentions {', '.join(feature)}", feature, features=features)
    action = action_missing(question, evidence, weights)
    if action is not None:
        features["action_missing"] = 1.0
        written = written_forms(question).get(action, action)
        return Assessment(False, f"no passage found on this question says how to {written}", features=features)
    elsewhere = [
        term for term in terms if not any(_term_tokens(term) <= _text_units(hit.chunk.indexed_text) for hit in evidence)
    ]
    if elsewhere:
        features["terms_in_evidence"] = 1.0 - len(elsewhere) / len(terms)
    notes = someone_else(question, hits)
    flags = [ABOUT_SOMEONE_ELSE] if notes else []
    answerable = decide(features)
    reason = None
    if not answerable:
        reason = "no passage found is about this question"
        if elsewhere:
            named = ", ".join(elsewhere)
            reason = f"{named} is mentioned in the store, but not in the passages closest to the question"
        elif features["absent_share"] >= DOUBTFUL_ABSENT:
            reason = "no message or section mentions " + ", ".join(absent_words(question, absent))
        elif features.get("absent_noun") or features.get("absent_chinese_words", 0.0) >= 2:
            named = absent_nouns(asked_subject, weights) or absent_words(question, absent)
            reason = "no message or section mentions " + ", ".join(named)
        elif retrieval.dense and any(retrieval.dense[0][0] == hit.chunk.id for hit in asked):
            reason = ONLY_ASKED  # the closest passage asks the question too
    stating = [hit.chunk.id for hit in member_statements(question, *member, evidence)] if member else []
    return Assessment(answerable, reason, [], flags, notes, features, weights, question, stating)


def absent_words(question: str, absent_units: list[str]) -> list[str]:
    """The question's words (as written) behind units no passage holds."""
    words = []
    for token in dict.fromkeys(tokenize(question)):
        units = question_units(token)
        if units and units & set(absent_units):
            words.append(token)
    words = [word for word in words if not any(word != other and word in other for other in words)]
    written = written_forms(question)
    return [written.get(word, word) for word in words] or absent_units


def decide(features: dict[str, float]) -> bool:
    """Answer when the question's codes are in the passages found, enough of its rarer words are in one of
    them, and the dense side agrees with that passage (or the best dense score stands out)."""
    if features.get("terms_in_evidence", 1.0) < 1.0 or features["absent_share"] >= MAX_ABSENT:
        return False
    if features["absent_share"] >= DOUBTFUL_ABSENT and features["standout"] < CLEAR_STANDOUT:
        return False
    if features.get("absent_chinese_words", 0.0) >= 2 and features["standout"] < CLEAR_STANDOUT:
        return False  # two of the question's words are nowhere: as for a large absent share
    if features.get("absent_noun") and features["standout"] < MIN_STANDOUT:
        return False  # a thing the question names is nowhere: only a clearly standing-out passage may answer
    if features["weighted_coverage"] < MIN_COVERAGE:
        return False
    return bool(features["covering_agrees"]) or features["standout"] >= MIN_STANDOUT


def citable(question: str, hits: list[Hit], assessment: Assessment) -> list[Hit]:
    """The hits an answer cites: those holding the question's codes that cover enough of its rarer words or
    are top dense passages, and score at least half the best hit of their source; at least the best hit."""
    question = assessment.question or standard_question(question)
    wanted = [_term_tokens(term) for term in codes(question)]
    best: dict[str, float] = {}
    for hit in hits:
        best.setdefault(hit.chunk.source_type, hit.score)
    chosen = [
        hit
        for hit in hits
        if hit.score >= CITED_SHARE * best[hit.chunk.source_type]
        and all(tokens <= _text_units(hit.chunk.indexed_text) for tokens in wanted)
        and (
            coverage(question, hit, assessment.weights) >= MIN_COVERAGE
            or (hit.dense_rank is not None and hit.dense_rank < AGREEMENT_RANKS)
        )
    ]
    stating = [hit for hit in hits if hit.chunk.id in assessment.stating]
    return stating + [hit for hit in chosen if hit not in stating] or hits[:1]
