"""WhatsApp chat `.txt` exports (`_chat.txt`, `WhatsApp Chat with X.txt`), Android and iOS, many locales.

Android: `31/12/2023, 21:05 - Name: text`, `12/31/23, 9:05 PM - Name: text`,
`31.12.23, 21:05 - Name: text`; iOS: `[31/12/2023, 21:05:33] Name: text`. Lines
that do not start with a date continue the previous message.

Decisions:
- Each line is read on its own: one file can hold exports from several phones
  pasted together (brackets or dashes, 12 or 24 hours, with or without seconds).
  Day/month order is settled per header style (bracket or dash, date separator,
  year digits, clock): a first field above 12 makes it the day; else a second
  field above 12 makes it the month; else a first field that goes down between
  consecutive dates of one year is the day (months only go up); else it is
  assumed: month first for 12-hour clocks (US phones), day first otherwise (most
  of the world). Conversation metadata says which and why, per style when the
  file has several.
- Times are the phone's wall clock with no zone. They are stored as if UTC and
  the conversation says `metadata["timezone"] = "unknown (local time read as UTC)"`;
  `read(path)` takes no zone argument, and guessing one from the locale would be
  worse than saying plainly that it is not known.
- Lines with no `Name:` (encryption notice, joins, subject changes), iOS lines
  whose text starts with U+200E (how iOS marks events, which it files under the
  chat's name), and the end-to-end encryption notice even without that mark
  (older iOS exports, or files whose marks were stripped) become system lines
  with sender "system".
- There are no platform ids: sender ref = the name as shown; message id =
  `<conversation>:<time>:<hash of sender and text>` (stable across re-exports);
  conversation ref = `whatsapp:<chat name>` (from the file or folder name, or
  iOS's first event line). More than two people speaking makes it a group
  (so a two-person group reads as direct: group events are worded per locale).
- `<Media omitted>`, `image omitted`, `<attached: 00000012-PHOTO-....jpg>` and
  `IMG-....jpg (file attached)` become media messages (`[image] name`); "This
  message was deleted" / "You deleted this message" become `recalled`; a trailing
  `<This message was edited>` is dropped and noted in `metadata["edited"]`.
- `@Name` (newer exports wrap the name in U+2068/U+2069) -> `mentions`, resolved
  against the names that speak in the file.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import confined, head_lines, read_filled_text, text_message_id

NAME = "whatsapp"

MARKS = "\ufeff\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_DATE = r"(?P<date>\d{1,4}(?P<sep>[./-])\s?\d{1,2}(?P=sep)\s?\d{1,4})"
_MERIDIEM = r"(?P<ampm>[ap]\.?[\s\u202f\u00a0]?m\.?)"
_PREFIX_MERIDIEM = r"(?P<pre>上午|下午|午前|午後|오전|오후)"
_TIME = r"(?P<time>\d{1,2}[:.]\d{2}(?:[:.]\d{2})?)"
# Between date and time: a comma and/or spaces, sometimes a word ("klo", "um", "à").
_CORE = (
    _DATE
    + r"\.?,?[\s\u202f\u00a0]+(?:[^\d\s\]\-]{1,4}[\s\u202f\u00a0]+)?"
    + _PREFIX_MERIDIEM
    + r"?"
    + _TIME
    + r"(?:[\s\u202f\u00a0]*"
    + _MERIDIEM
    + r")?"
)
IOS_LINE = re.compile(r"^\[" + _CORE + r"\][\s\u202f\u00a0]?(?P<rest>.*)$", re.IGNORECASE)
ANDROID_LINE = re.compile(r"^" + _CORE + r"[\s\u202f\u00a0]+[-–—][\s\u202f\u00a0](?P<rest>.*)$", re.IGNORECASE)

TITLE_PATTERNS = (
    re.compile(r"^WhatsApp[- ]Chat\s+(?:with|mit|-|met|med|z)\s+(?P<title>.+)$", re.IGNORECASE),
    re.compile(
        r"^(?:Chat de WhatsApp con|Discussion WhatsApp avec|Conversa do WhatsApp com|Chat WhatsApp con)\s+"
        r"(?P<title>.+)$",
        re.IGNORECASE,
    ),
)
MEDIA_OMITTED = re.compile(
    r"^<(?:Media omitted|Medien ausgelassen|Multimedia omitido|Médias omis|Mídia oculta|Media omessi|"
    r"Media weggelaten)>$",
    re.IGNORECASE,
)
IOS_OMITTED = re.compile(
    r"^(?P<what>image|video|audio|sticker|GIF|document|Contact card|Bild|Audio|Sticker|Dokument)\s"
    r"(?:omitted|weggelassen)$",
    re.IGNORECASE,
)
ATTACHED_IOS = re.compile(r"^<(?:attached|angehängt|adjunto|pièce jointe|anexado|allegato):\s*(?P<name>[^>]+)>")
ATTACHED_ANDROID = re.compile(
    r"^(?P<name>\S[^\n]*?\.\w{1,5}) \((?:file attached|Datei angehängt|archivo adjunto|fichier joint|"
    r"arquivo anexado|file allegato)\)"
)
DELETED = re.compile(
    r"^(?:This message was deleted|You deleted this message|Diese Nachricht wurde gelöscht|"
    r"Du hast diese Nachricht gelöscht|Se eliminó este mensaje|Eliminaste este mensaje|"
    r"Ce message a été supprimé|Vous avez supprimé ce message|Questo messaggio è stato eliminato|"
    r"Hai eliminato questo messaggio|Essa mensagem foi apagada|Esta mensagem foi apagada|Você apagou esta mensagem|"
    r"Sie haben diese Nachricht gelöscht|Este mensaje fue eliminado|Has eliminado este mensaje|"
    r"Dit bericht is verwijderd|U hebt dit bericht verwijderd)\.?$",
    re.IGNORECASE,
)
# The trailing marker an edited message carries, compared whole (a search pattern would backtrack on long lines).
EDITED_MARKERS = frozenset(
    {
        "this message was edited",
        "diese nachricht wurde bearbeitet",
        "se editó este mensaje",
        "ce message a été modifié",
    }
)
ENCRYPTION_NOTICE = re.compile(
    r"^(?:Messages and calls are end-to-end encrypted|Messages to this (?:group|chat) are now secured with "
    r"end-to-end encryption|Messages you send to this (?:group|chat) and calls are now secured with end-to-end "
    r"encryption|Nachrichten und Anrufe sind Ende-zu-Ende-verschlüsselt|Los mensajes y las llamadas están cifrados "
    r"de extremo a extremo|Les messages et les appels sont chiffrés de bout en bout|I messaggi e le chiamate sono "
    r"crittografati end-to-end|As mensagens e as chamadas são protegidas com a criptografia de ponta a ponta|"
    r"Berichten en oproepen worden end-to-end versleuteld)",
    re.IGNORECASE,
)
OMITTED_KINDS = {
    "image": "image",
    "bild": "image",
    "sticker": "image",
    "gif": "video",
    "video": "video",
    "audio": "voice",
}
MENTION_ISOLATED = re.compile("@\u2068([^\u2069\n]{1,80})\u2069")
NAME_LIMIT = 80
HEAD_BYTES = 8192
TIMEZONE_NOTE = "unknown (local time read as UTC)"


@dataclass(slots=True)
class _Raw:
    line: int
    date: str
    time: str
    ampm: str
    rest: str
    style: str  # the header's shape, e.g. "[d/d/yyyy, d:d:d]": the unit day/month order is settled for
    continuation: list[str] = field(default_factory=list)


def _clean(line: str) -> str:
    return line.lstrip(MARKS)


def _style(found: re.Match[str]) -> str:
    """The header's shape with digits masked: exports of one phone share it, another phone's differ."""
    last = found.group("date").rsplit(found.group("sep"), 1)[-1].strip()
    date = re.sub(r"\d+", "d", found.group("date"))[:-1] + "y" * len(last)  # 2- or 4-digit years: other locales
    clock = re.sub(r"\d+", "d", found.group("time"))
    meridiem = " AM/PM" if found.group("ampm") or found.group("pre") else ""
    return f"[{date}, {clock}{meridiem}]" if found.re is IOS_LINE else f"{date}, {clock}{meridiem} -"


def _match(line: str) -> re.Match[str] | None:
    cleaned = _clean(line)
    return IOS_LINE.match(cleaned) or ANDROID_LINE.match(cleaned)


def _head_lines(path: Path) -> list[str]:
    return [line for line in head_lines(path, HEAD_BYTES) if line.strip(MARKS + " \t")]


def _is_chat_file(path: Path) -> bool:
    if path.suffix.lower() != ".txt":
        return False
    lines = _head_lines(path)[:30]
    # Every WhatsApp export starts with a dated line; most following lines are dated too.
    return (
        bool(lines)
        and _match(lines[0]) is not None
        and sum(_match(line) is not None for line in lines) * 3 >= len(lines)
    )


def _chat_files(folder: Path) -> list[Path]:
    return sorted(
        child
        for child in folder.iterdir()
        if child.is_file() and (child.name == "_chat.txt" or _title_from(child.stem)) and _is_chat_file(child)
    )


def detect(path: Path) -> bool:
    if path.is_file():
        return _is_chat_file(path)
    if path.is_dir():
        try:
            return bool(_chat_files(path))
        except OSError:
            return False
    return False


def _title_from(name: str) -> str:
    for pattern in TITLE_PATTERNS:
        found = pattern.match(name.strip())
        if found:
            return found.group("title").strip()
    return ""


def _date_parts(date: str) -> list[int]:
    return [int(part) for part in re.split(r"[./-]\s?", date)]


def _date_order(raws: list[_Raw]) -> tuple[str, str]:
    """("DMY" | "MDY" | "YMD", why) for lines of one header style."""
    dates = [_date_parts(raw.date) for raw in raws]
    if dates and all(len(str(parts[0])) == 4 or parts[0] > 31 for parts in dates):
        return "YMD", "year first"
    if any(parts[0] > 12 for parts in dates):
        return "DMY", "a first field above 12"
    if any(parts[1] > 12 for parts in dates):
        return "MDY", "a second field above 12"
    for before, after in itertools.pairwise(dates):
        if before[2] == after[2] and after[0] < before[0]:
            return "DMY", "the first field went down within a year"
        if before[2] == after[2] and after[1] < before[1]:
            return "MDY", "the second field went down within a year"
    if any(raw.ampm for raw in raws):
        return "MDY", "assumed: 12-hour clock, as on US-locale phones"
    return "DMY", "assumed: day first, as in most locales"


def _date_orders(raws: list[_Raw]) -> dict[str, tuple[str, str]]:
    """Style -> (order, why), each style judged on its own lines."""
    by_style: dict[str, list[_Raw]] = {}
    for raw in raws:
        by_style.setdefault(raw.style, []).append(raw)
    return {style: _date_order(group) for style, group in by_style.items()}


def _moment(raw: _Raw, order: str) -> datetime:
    parts = _date_parts(raw.date)
    if order == "YMD":
        year, month, day = parts
    elif order == "MDY":
        month, day, year = parts
    else:
        day, month, year = parts
    if year < 100:
        year += 2000
    pieces = [int(piece) for piece in re.split(r"[:.]", raw.time)]
    hour, minute = pieces[0], pieces[1]
    second = pieces[2] if len(pieces) > 2 else 0
    meridiem = raw.ampm.lower().replace(".", "").replace(" ", "").replace("\u202f", "").replace("\u00a0", "")
    if meridiem in ("am", "上午", "午前", "오전") and hour == 12:
        hour = 0
    elif meridiem in ("pm", "下午", "午後", "오후") and hour < 12:
        hour += 12
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def _split(rest: str) -> tuple[str, str] | None:
    """(sender, text) when the line is someone speaking; None for a system line."""
    name, colon, text = rest.partition(": ")
    if not colon:
        if rest.endswith(":") and 0 < len(rest) <= NAME_LIMIT:
            return rest[:-1], ""  # a message whose text starts on the next line
        return None
    # Names do not hold quotes; "X changed the subject to "a: b"" does.
    if not name.strip() or len(name) > NAME_LIMIT or any(quote in name for quote in '"“”«»„'):
        return None
    return name.strip(MARKS + " "), text


def _attachment_kind(file_name: str) -> str:
    upper = file_name.upper()
    for marker, kind in (
        ("PHOTO", "image"),
        ("IMG-", "image"),
        ("STICKER", "image"),
        ("STK-", "image"),
        ("VIDEO", "video"),
        ("VID-", "video"),
        ("GIF", "video"),
        ("AUDIO", "voice"),
        ("PTT-", "voice"),
        ("AUD-", "voice"),
    ):
        if marker in upper:
            return kind
    suffix = PurePosixPath(file_name.lower()).suffix
    if suffix in (".jpg", ".jpeg", ".png", ".webp", ".heic", ".gif"):
        return "image"
    if suffix in (".mp4", ".mov", ".3gp"):
        return "video"
    if suffix in (".opus", ".ogg", ".m4a", ".aac", ".mp3"):
        return "voice"
    return "file"


def _media(text: str) -> tuple[str, str]:
    """(kind, text with the media placeholder rewritten) or ("", text)."""
    first, _, caption = text.partition("\n")
    head = _clean(first).strip()
    placeholder = ""
    kind = ""
    attached = ATTACHED_IOS.match(head) or ATTACHED_ANDROID.match(head)
    if attached:
        name = attached.group("name").strip()
        kind = _attachment_kind(name)
        placeholder = f"[{kind}] {name}"
        rest = head[attached.end() :].strip()
        caption = "\n".join(part for part in (rest, caption) if part)
    elif MEDIA_OMITTED.match(head):
        kind, placeholder = "file", "[file] (media omitted)"
    else:
        omitted = IOS_OMITTED.match(head)
        if omitted:
            kind = OMITTED_KINDS.get(omitted.group("what").lower(), "file")
            placeholder = f"[{kind}] ({omitted.group('what').lower()} omitted)"
    if not kind:
        return "", text
    return kind, "\n".join(part for part in (placeholder, caption) if part)


def _parse_lines(text: str, file: str, skipped: list[Skip]) -> list[_Raw]:
    raws: list[_Raw] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = _match(line)
        if found:
            raws.append(
                _Raw(
                    number,
                    found.group("date"),
                    found.group("time"),
                    found.group("ampm") or found.group("pre") or "",
                    found.group("rest"),
                    _style(found),
                )
            )
        elif raws:
            raws[-1].continuation.append(line)
        elif line.strip(MARKS + " \t"):
            skipped.append(Skip(file, number, "text before the first dated line"))
    return raws


def _title(path: Path, raws: list[_Raw]) -> str:
    title = _title_from(path.stem) or _title_from(path.parent.name)
    if title:
        return title
    if raws:
        # iOS files its first event (the encryption notice) under the chat's own name.
        first = raws[0].rest
        name, colon, body = first.partition(": ")
        if colon and (body.startswith("\u200e") or ENCRYPTION_NOTICE.match(body)) and len(name) <= NAME_LIMIT:
            return name.strip(MARKS + " ")
    return path.stem if path.stem != "_chat" else path.parent.name or "chat"


@dataclass(slots=True)
class _Draft:
    line: int
    moment: datetime
    sender: str  # "system" for platform events
    text: str
    kind: str = "text"
    recalled: bool = False
    edited: bool = False


def _without_edited_marker(body: str) -> tuple[str, bool]:
    """The text without a trailing `<This message was edited>` (and the marks before it), and whether it had one."""
    trimmed = body.rstrip()
    if not trimmed.endswith(">"):
        return body, False
    opening = trimmed.rfind("<")
    if opening == -1 or trimmed[opening + 1 : -1].strip().lower() not in EDITED_MARKERS:
        return body, False
    return trimmed[:opening].rstrip(" \t\u200e"), True


def _draft(raw: _Raw, moment: datetime) -> _Draft:
    body = "\n".join([raw.rest, *raw.continuation])
    spoken = _split(raw.rest)
    if spoken is None:
        return _Draft(raw.line, moment, "system", _clean(body).strip(), "system")
    sender, first = spoken
    body = "\n".join([first, *raw.continuation]).strip("\n") if raw.continuation else first
    kind, body = _media(body)
    cleaned = _clean(body).strip().strip(MARKS).strip()
    recalled = bool(DELETED.match(cleaned))
    if (body.startswith("\u200e") or ENCRYPTION_NOTICE.match(cleaned)) and not kind and not recalled:
        return _Draft(raw.line, moment, "system", cleaned, "system")
    body, edited = _without_edited_marker(body)
    return _Draft(raw.line, moment, sender, cleaned if recalled or kind else body, kind or "text", recalled, edited)


def _mentions(text: str, names: list[str]) -> tuple[str, tuple[str, ...]]:
    """`@Name` (newer exports wrap it in U+2068/U+2069) -> sender refs; the isolates are dropped from the text."""
    found: list[str] = []
    text = MENTION_ISOLATED.sub(lambda match: "@" + match.group(1), text)
    if "@" not in text or not names:
        return text, ()
    # One alternation, longest names first: the regex engine tries them at each "@" in C, not Python.
    pattern = re.compile("@(?:" + "|".join(re.escape(name) for name in names) + ")", re.IGNORECASE)
    by_lower = {name.lower(): name for name in names}
    for match in pattern.finditer(text):
        name = by_lower.get(match.group()[1:].lower())
        if name is not None and name not in found:
            found.append(name)
    return text, tuple(found)


def _read_file(path: Path, result: ReadResult) -> None:
    file = str(path)
    text = read_filled_text(path, result.skipped, MARKS + " \t\r\n")
    if text is None:
        return
    raws = _parse_lines(text, file, result.skipped)
    if not raws:
        result.skipped.append(Skip(file, None, "no dated WhatsApp lines found"))
        return
    orders = _date_orders(raws)
    title = _title(path, raws)
    ref = f"whatsapp:{title}"
    drafts: list[_Draft] = []
    for raw in raws:
        try:
            moment = _moment(raw, orders[raw.style][0])
        except ValueError as error:
            lost = f" and its {len(raw.continuation)} continuation lines" if raw.continuation else ""
            result.skipped.append(Skip(file, raw.line, f"bad date/time {raw.date} {raw.time} ({error}){lost}"))
            continue
        drafts.append(_draft(raw, moment))
    senders = sorted({draft.sender for draft in drafts if draft.kind != "system"}, key=len, reverse=True)
    seen: dict[str, int] = {}
    for draft in drafts:
        system = draft.kind == "system"
        body, mentions = (draft.text, ()) if system else _mentions(draft.text, senders)
        metadata: dict[str, object] = {"line": draft.line}
        if draft.edited:
            metadata["edited"] = True
        result.messages.append(
            Message(
                id=text_message_id(ref, draft.moment, draft.sender, body, seen),
                conversation=ref,
                sender=draft.sender,
                sender_name="" if system else draft.sender,
                sent_at=draft.moment,
                text=body,
                kind=draft.kind,
                role="system" if system else "member",
                mentions=tuple(name for name in mentions if name != draft.sender),
                recalled=draft.recalled,
                metadata=metadata,
            )
        )
    metadata: dict[str, object] = {"timezone": TIMEZONE_NOTE, "file": path.name}
    if len(orders) == 1:
        ((order, basis),) = orders.values()
        metadata.update(date_order=order, date_order_basis=basis)
    else:
        metadata["date_order"] = "per header style"
        metadata["date_orders"] = {style: f"{order} ({basis})" for style, (order, basis) in orders.items()}
    kind = "group" if len(senders) > 2 else "direct"
    result.conversations.append(Conversation(ref, title, kind, NAME, metadata))


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    files = [path] if path.is_file() else confined(path, _chat_files(path), result.skipped) if path.is_dir() else []
    if not files:
        result.skipped.append(Skip(str(path), None, "no WhatsApp chat .txt files found"))
    for file in files:
        _read_file(file, result)
    result.messages.sort(key=lambda message: message.sent_at)
    return result
