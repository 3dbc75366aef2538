"""IRC logs: `[HH:MM] <nick> text`, irssi `HH:MM <nick> text`, weechat `YYYY-MM-DD HH:MM:SS<TAB>nick<TAB>text`.

Decisions:
- The date comes from the line when it has one (weechat, `[YYYY-MM-DD HH:MM]`),
  else from the file name (`#chan.2004-11-15.log`, `chan_20041115.txt`) or its
  folders (`2004/11/15/#chan.txt`, as irclogs.ubuntu.com and ZNC lay them out),
  else from a `--- Log opened` / `**** BEGIN LOGGING AT` line; `--- Day changed`
  lines move it on, and so does a clock that goes backwards (midnight passed
  without a marker). With no date anywhere it is 1970-01-01 and the conversation
  says so in `metadata["date"]`. Times are read as UTC (IRC clients log the
  machine's clock; the zone is not recorded), noted in `metadata["timezone"]`.
- Some logs use a 12-hour clock without AM/PM (early irclogs.ubuntu.com:
  `[12:59]` then `[01:00]` one minute later). A log whose hours are all 1-12 and
  that goes from 12:xx to a smaller hour is read that way: the day starts at
  12:xx AM (or at the half of the day a `Log opened` time says) and every time
  the clock goes backwards is the next half-day. `metadata["clock"]` says so.
  `[09:05 PM]`-style times are read as written.
- Joins, parts, quits, nick changes, modes, topics, notices and log markers are
  platform events: system lines (log open/close markers are only counted).
- `/me` actions (`* nick waves`) are the speaker's own words, so they stay member
  messages (text `* nick waves`, `metadata["action"] = True`); only `* nick has
  joined`-style event lines some clients print with a star are system lines.
- Untimed `=== ` lines (early irclogs.ubuntu.com) are events (`=== nick [host]
  has joined #chan`) or, for anything else, the nick's `/me` action; they take
  the time of the line before them.
- `nick: text` addressing a nick seen anywhere in the log, or `nick, text`
  addressing one seen before this line (speaking, acting, joining, renamed to),
  -> `mentions`. The comma form needs the nick to be present already because
  nicks are often words: "usual, quite stable" answers a question, it does not
  call someone named usual who turns up later.
- Sender ref = the nick without its mode prefix (`@`, `+`...); message id =
  `<conversation>:<time>:<hash of nick and text>`; conversation ref =
  `irc:<channel>` (from the file name, else a join line, else the file name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from pathlib import Path

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import head_lines, read_filled_text, read_line_files, text_message_id

NAME = "irc"

_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?: ?[AaPp]\.?[Mm]\.?)?"
BRACKETED = re.compile(r"^\[(?:(?P<date>\d{4}-\d{2}-\d{2})[ T])?(?P<time>" + _TIME + r")\]\s?(?P<rest>.*)$")
BARE = re.compile(r"^(?P<time>" + _TIME + r")\s+(?P<rest>.*)$")
WEECHAT = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})\t(?P<prefix>[^\t]*)\t(?P<rest>.*)$")
XCHAT = re.compile(r"^(?P<month>[A-Z][a-z]{2}) (?P<day>[ \d]\d) (?P<time>\d{2}:\d{2}:\d{2}) (?P<rest>.*)$")
SPEECH = re.compile(r"^<[ @+%~&!]?(?P<nick>[^\s<>]+)>\s?(?P<text>.*)$")
ACTION = re.compile(r"^\*\s(?P<nick>[^\s*]+)\s(?P<text>.*)$")
# Event lines some clients print with a single star, which an action must not be mistaken for.
STAR_EVENT = re.compile(
    r"^\*\s(?:\S+\s(?:has (?:joined|left|quit)|is now known as|sets mode|has changed the topic|changes topic|"
    r"has kicked)|Now talking on|Topic for|Disconnected|Connecting|Joins:|Parts:|Quits:|Mode )"
)
EVENT = re.compile(r"^(?:-!-|\*\*\*|-->|<--|--|=!=|===|\*\*|-\S+-)\s?")
# Untimed `=== ` lines that are events; any other `=== nick text` is nick's action.
UNTIMED = re.compile(r"^=== (?P<nick>\S+) (?P<text>.*)$")
UNTIMED_EVENT = re.compile(
    r"^\S+ (?:\S+ +)?(?:has (?:joined|left|quit)|is now known as|sets mode|was kicked|has kicked|changed the topic|"
    r"set the topic|has changed the topic)|^(?:Topic for|Users on|Mode |Disconnected|Connected|Looking up|Now talking)"
)
JOIN_CHANNEL = re.compile(r"has joined (?P<channel>[#&][^\s,]+)|^Joins: \S+ (?:\S+ )?(?P<channel2>[#&][^\s,]+)")
# Greedy runs to the line's end, stripped afterwards: a lazy group before `\s*$` backtracks quadratically.
DAY_CHANGED = re.compile(r"^-{3}\s+Day changed\s+(?P<when>\S.*)$")
LOG_OPENED = re.compile(
    r"^(?:-{3}\s+Log (?P<kind>opened|closed)|\*{4}\s+(?P<xkind>BEGIN|ENDING) LOGGING AT)\s+(?P<when>\S.*)$"
)
FILE_DATE = re.compile(r"(?<!\d)(?P<year>(?:19|20)\d{2})[-_.]?(?P<month>[01]\d)[-_.]?(?P<day>[0-3]\d)(?!\d)")
NICK_CHANGE = re.compile(r"^(?P<old>\S+) is now known as (?P<new>\S+)")
MAX_WHEN_CHARS = 80
FILE_CHANNEL = re.compile(r"[#&][^\s.]+")
JOINER = re.compile(r"^(?P<nick>[^\s\[(]+) (?:[\[(][^\])]*[\])] +)?has joined|^Joins: (?P<nick2>\S+)")
ADDRESS = re.compile(r"^(?P<nick>[^\s:,]{1,40})[:,]\s")
MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1
    )
}
LOG_SUFFIXES = frozenset({".log", ".txt", ".weechatlog", ""})
HEAD_BYTES = 8192
EPOCH_DAY = date(1970, 1, 1)


@dataclass(slots=True)
class _Line:
    number: int
    day: date | None  # a date the line itself carries
    clock: time | None  # None for an untimed line: it takes the time of the line before
    sender: str  # "system" for events
    text: str
    action: bool = False
    meridiem: bool = False  # the time said AM or PM itself


def _clock(value: str) -> tuple[time, bool]:
    """(time, whether it said AM/PM)."""
    digits = value.rstrip("AaPpMm. ")
    suffix = value[len(digits) :].lower().replace(".", "").strip()
    pieces = [int(piece) for piece in digits.split(":")]
    hour = pieces[0]
    if suffix:
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} on a 12-hour clock")
        hour = hour % 12 + (12 if suffix == "pm" else 0)
    return time(hour, pieces[1], pieces[2] if len(pieces) > 2 else 0), bool(suffix)


def _when(value: str) -> date | None:
    value = value.strip()
    if len(value) > MAX_WHEN_CHARS:
        return None
    for pattern in ("%a %b %d %H:%M:%S %Y", "%a %b %d %Y", "%a, %d %b %Y", "%Y-%m-%d", "%a %b %d %H:%M:%S %Z %Y"):
        try:
            return datetime.strptime(value.strip(), pattern).date()
        except ValueError:
            continue
    return None


def _classify(rest: str) -> tuple[str, str, bool] | None:
    """(sender, text, is_action) for what follows the timestamp; sender "system" for events."""
    speech = SPEECH.match(rest)
    if speech:
        return speech.group("nick"), speech.group("text"), False
    if STAR_EVENT.match(rest):
        return "system", rest[2:].strip(), False
    action = ACTION.match(rest)
    if action:
        return action.group("nick"), rest, True
    if EVENT.match(rest):
        return "system", EVENT.sub("", rest, count=1).strip(), False
    return None


def _parse(line: str) -> tuple[date | None, str, str] | None:
    """(date on the line, clock, rest) for a timestamped line; None when it is not one."""
    try:
        return _parse_stamp(line)
    except ValueError:  # a date like 2004-13-45
        return None


def _parse_stamp(line: str) -> tuple[date | None, str, str] | None:
    found = WEECHAT.match(line)
    if found:
        prefix = found.group("prefix").strip()
        rest = found.group("rest")
        if prefix in ("-->", "<--", "--", "=!=", ""):
            rest = f"-!- {rest}"
        elif prefix == "*":
            rest = f"* {rest}"
        else:
            rest = f"<{prefix}> {rest}"
        return date.fromisoformat(found.group("date")), found.group("time"), rest
    found = BRACKETED.match(line)
    if found:
        day = date.fromisoformat(found.group("date")) if found.group("date") else None
        return day, found.group("time"), found.group("rest")
    found = XCHAT.match(line)
    if found and found.group("month") in MONTHS:
        return None, found.group("time"), found.group("rest").replace("\t", " ", 1)
    found = BARE.match(line)
    if found:
        return None, found.group("time"), found.group("rest")
    return None


def _head_lines(path: Path) -> list[str]:
    return [line.lstrip("\ufeff") for line in head_lines(path, HEAD_BYTES) if line.strip()]


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() not in LOG_SUFFIXES:
        return False
    lines = _head_lines(path)[:40]
    if not lines:
        return False
    recognised = 0
    speech = 0
    for line in lines:
        if DAY_CHANGED.match(line) or LOG_OPENED.match(line):
            recognised += 1
            continue
        parsed = _parse(line)
        if parsed is None:
            continue
        kind = _classify(parsed[2])
        if kind is not None:
            recognised += 1
            speech += kind[0] != "system"
    # Mostly IRC-shaped lines, and someone actually talking (not just a list of times).
    return speech >= 1 and recognised * 10 >= len(lines) * 6


def _path_date(path: Path) -> tuple[date | None, str]:
    """(date, where it came from) from the file name, else from `YYYY/MM/DD/` or a dated folder above it."""
    found = FILE_DATE.search(path.name)
    if found:
        day = _date_of(found.group("year"), found.group("month"), found.group("day"))
        if day:
            return day, "file name"
    parts = path.parent.parts[-3:]
    if len(parts) == 3 and all(part.isdigit() for part in parts) and len(parts[0]) == 4:
        day = _date_of(*parts)
        if day:
            return day, "folder names"
    found = FILE_DATE.search(path.parent.name)
    if found:
        day = _date_of(found.group("year"), found.group("month"), found.group("day"))
        if day:
            return day, "folder name"
    return None, ""


def _date_of(year: str, month: str, day: str) -> date | None:
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def _twelve_hour(lines: list[_Line], marker_indices: set[int]) -> bool:
    """A 12-hour clock without AM/PM: hours only 1-12, and 12:xx followed by a smaller hour on the same day.

    A step across a day-change marker or between lines that carry their own dates is no evidence:
    a 24-hour log goes from 12:50 to 01:00 that way too.
    """
    timed = [
        (index, line.clock.hour, line.day is not None)
        for index, line in enumerate(lines)
        if line.clock is not None and not line.meridiem
    ]
    if not timed or any(hour == 0 or hour > 12 for _, hour, _ in timed):
        return False
    return any(
        before == 12 and after < 12 and not dated and marker_indices.isdisjoint(range(start + 1, end + 1))
        for (start, before, _), (end, after, dated) in pairwise(timed)
    )


def _channel(path: Path, lines: list[_Line]) -> str:
    for name in (path.name, path.parent.name):
        found = FILE_CHANNEL.search(name)
        if found:
            return found.group(0)
    for line in lines:
        if line.sender == "system":
            joined = JOIN_CHANNEL.search(line.text)
            if joined:
                return joined.group("channel") or joined.group("channel2")
    stem = FILE_DATE.sub("", path.stem).strip(" ._-").split(".")[0]
    return stem or path.stem


def _opening_hour(value: str) -> int | None:
    """The hour of a `Log opened Mon Nov 15 15:02:11 2004` time, when it has one."""
    try:
        return datetime.strptime(value.strip()[:MAX_WHEN_CHARS], "%a %b %d %H:%M:%S %Y").hour
    except ValueError:
        return None


def _lines(text: str, file: str, result: ReadResult) -> tuple[list[_Line], list[tuple[int, date, int | None]]]:
    """The log's lines, and (index into lines, day, hour or None) for each day-change / log-open marker."""
    lines: list[_Line] = []
    markers: list[tuple[int, date, int | None]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip("\ufeff").rstrip("\r")
        if not line.strip():
            continue
        marker = DAY_CHANGED.match(line) or LOG_OPENED.match(line)
        if marker:
            when = _when(marker.group("when"))
            opening = marker.re is DAY_CHANGED or marker.group("kind") == "opened" or marker.group("xkind") == "BEGIN"
            if when and opening:
                hour = None if marker.re is DAY_CHANGED else _opening_hour(marker.group("when"))
                markers.append((len(lines), when, 0 if marker.re is DAY_CHANGED else hour))
            elif when is None:
                shown = marker.group("when").strip()[:40]
                result.skipped.append(Skip(file, number, f"date {shown!r} not understood"))
            result.ignore("irc log marker")
            continue
        untimed = UNTIMED.match(line)
        if untimed:
            rest = line[4:]
            if UNTIMED_EVENT.match(rest):
                lines.append(_Line(number, None, None, "system", rest.strip()))
            else:
                nick = untimed.group("nick")
                lines.append(_Line(number, None, None, nick, f"* {nick} {untimed.group('text')}", True))
            continue
        parsed = _parse(line)
        classified = _classify(parsed[2]) if parsed else None
        if parsed is None or classified is None:
            result.skipped.append(Skip(file, number, "not an IRC log line"))
            continue
        try:
            clock, meridiem = _clock(parsed[1])
        except ValueError as error:
            result.skipped.append(Skip(file, number, f"bad time {parsed[1]!r} ({error})"))
            continue
        sender, body, action = classified
        lines.append(_Line(number, parsed[0], clock, sender, body, action, meridiem))
    return lines, markers


def _read_file(path: Path, result: ReadResult) -> None:
    file = str(path)
    text = read_filled_text(path, result.skipped)
    if text is None:
        return
    day, date_basis = _path_date(path)
    lines, markers = _lines(text, file, result)
    if not any(line.clock is not None for line in lines):
        result.skipped.append(Skip(file, None, "no IRC lines found"))
        return
    twelve = _twelve_hour(lines, {index for index, _, _ in markers})
    if day is None and markers:
        day, date_basis = markers[0][1], "log opened / day changed line"
    if day is None:
        dated = next((line.day for line in lines if line.day), None)
        if dated:
            day, date_basis = dated, "dates on the lines"
    if day is None:
        day, date_basis = EPOCH_DAY, "unknown (no date in file name or log; 1970-01-01 assumed)"
    channel = _channel(path, lines)
    ref = f"irc:{channel}"
    nicks = {line.sender.lower(): line.sender for line in lines if line.sender != "system"}
    for line in lines:
        joiner = JOINER.match(line.text) if line.sender == "system" else None
        if joiner:
            nick = joiner.group("nick") or joiner.group("nick2")
            nicks.setdefault(nick.lower(), nick)
    opening_hour = markers[0][2] if markers and markers[0][0] == 0 else None
    half = 1 if twelve and opening_hour is not None and opening_hour >= 12 else 0
    marker_at = {index: (when, hour) for index, when, hour in markers}
    moments: list[datetime | None] = []
    previous: datetime | None = None
    rollovers = 0
    for index, line in enumerate(lines):
        if index in marker_at:
            day, hour = marker_at[index]
            half = 1 if hour is not None and hour >= 12 else 0
        if line.day is not None:
            day = line.day
        if line.clock is None:
            moments.append(previous)  # untimed: the time of the line before (None before the first timed line)
            continue
        twelve_hour_line = twelve and not line.meridiem
        clock = line.clock.replace(hour=line.clock.hour % 12 + 12 * half) if twelve_hour_line else line.clock
        moment = datetime.combine(day, clock, tzinfo=UTC)
        if previous is not None and moment < previous and line.day is None and index not in marker_at:
            if twelve_hour_line and half == 0:
                half = 1  # the clock passed noon
                clock = line.clock.replace(hour=line.clock.hour % 12 + 12)
            else:
                # The clock went backwards with no marker: midnight passed.
                day += timedelta(days=1)
                half = 0
                rollovers += 1
                clock = line.clock.replace(hour=line.clock.hour % 12) if twelve_hour_line else line.clock
            moment = datetime.combine(day, clock, tzinfo=UTC)
        previous = moment
        moments.append(moment)
    first_moment = next(moment for moment in moments if moment is not None)
    seen: dict[str, int] = {}
    present: set[str] = set()  # nicks seen so far: who a `nick, text` can address
    for line, moment in zip(lines, moments, strict=True):
        moment = moment or first_moment
        system = line.sender == "system"
        mentions: tuple[str, ...] = ()
        if not system and not line.action:
            addressed = ADDRESS.match(line.text)
            nick = addressed.group("nick").lower() if addressed else ""
            colon = addressed is not None and line.text[addressed.end() - 2] == ":"
            if nick in nicks and (colon or nick in present):
                target = nicks[nick]
                mentions = (target,) if target != line.sender else ()
        if system:
            joiner = JOINER.match(line.text)
            renamed = NICK_CHANGE.match(line.text)
            if joiner:
                present.add((joiner.group("nick") or joiner.group("nick2")).lower())
            elif renamed:
                present.add(renamed.group("new").lower())
        else:
            present.add(line.sender.lower())
        metadata: dict[str, object] = {"line": line.number}
        if line.action:
            metadata["action"] = True
        result.messages.append(
            Message(
                id=text_message_id(ref, moment, line.sender, line.text, seen),
                conversation=ref,
                sender=line.sender,
                sender_name="" if system else line.sender,
                sent_at=moment,
                text=line.text,
                kind="system" if system else "text",
                role="system" if system else "member",
                mentions=mentions,
                metadata=metadata,
            )
        )
    speakers = {line.sender for line in lines if line.sender != "system"}
    joins = any(JOIN_CHANNEL.search(line.text) or "Joins:" in line.text for line in lines if line.sender == "system")
    # Only channels have joins; a query (private) log is two people and no events.
    group = channel.startswith(("#", "&")) or len(speakers) > 2 or joins
    metadata = {"date": date_basis, "timezone": "unknown (log times read as UTC)", "channel": channel}
    if twelve:
        metadata["clock"] = "12-hour without AM/PM (read from 12:xx AM, each step back is the next half-day)"
    if rollovers:
        metadata["midnights_inferred"] = rollovers
    result.conversations.append(Conversation(ref, channel, "group" if group else "direct", NAME, metadata))


def read(path: Path) -> ReadResult:
    return read_line_files(path, NAME, "IRC", detect, _read_file, recursive=True)
