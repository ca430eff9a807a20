"""Go's time parsing as CRE's log parsers use it: a LogProfile's `spec.timestamp.layout` (Go's reference layout,
`2006-01-02 15:04:05.999999`) applied to a captured `timestamp`, and the kubelet's RFC 3339 prefix of a line read
with `timestamps=true`. Times are integer nanoseconds since the epoch, UTC: Python's datetime keeps microseconds,
and CRE's figures are differences of nanosecond times (`18:00:05.123456789 - 18:00:00` is `5.123457` s). Pure.

A layout is Go's: its elements (`2006`, `01`, `Jan`, `02`, `_2`, `15`, `03`, `04`, `05`, `PM`, `MST`, `Z07:00`,
`-0700`, `.000`, `.999`, …) read as `time.Parse` reads them, any other text matched literally (a run of spaces
matching any run), a fraction after the seconds taken even when the layout has none, and no zone meaning UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

NS = 1_000_000_000
MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
ELEMENTS = ("January", "Jan", "Monday", "Mon", "MST", "2006", "002", "06", "01", "02", "_2", "15", "03", "04", "05",
            "PM", "pm", "Z07:00:00", "Z070000", "Z07:00", "Z0700", "Z07", "-07:00:00", "-070000", "-07:00", "-0700",
            "-07", "1", "2", "3", "4", "5")
FRACTION = re.compile(r"[.,](0+|9+)(?![0-9])")
KUBELET = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))\s")
RFC3339_NANO = "2006-01-02T15:04:05.999999999Z07:00"


class Unparsed(ValueError):
    """A value the layout does not read, with Go's reason: the text left where an element could not read it (Go's
    `cannot parse "<text>"`), `extra text: "<text>"`, or `<field> out of range`."""


def tokens(layout: str) -> list[str]:
    """The layout cut into its elements and literal text (Go's `nextStdChunk`, the elements this module reads)."""
    out: list[str] = []
    i, literal = 0, ""
    while i < len(layout):
        if fraction := FRACTION.match(layout, i):
            if literal:
                out.append(literal)
                literal = ""
            out.append(fraction.group(0))
            i = fraction.end()
            continue
        element = next((e for e in ELEMENTS if layout.startswith(e, i)), "")
        if element:
            if literal:
                out.append(literal)
                literal = ""
            out.append(element)
            i += len(element)
        else:
            literal += layout[i]
            i += 1
    if literal:
        out.append(literal)
    return out


def number(value: str, fixed: bool) -> tuple[int, str]:
    """Go's `getnum`: one or two digits (exactly two when `fixed`)."""
    if not value[:1].isdigit() or not value[:1].isascii():
        raise Unparsed(value)
    if len(value) < 2 or not ("0" <= value[1] <= "9"):
        if fixed:
            raise Unparsed(value)
        return int(value[0]), value[1:]
    return int(value[:2]), value[2:]


def literal(value: str, text: str) -> str:
    """Go's `skip`: the literal text at the start of the value, a run of spaces matching any run."""
    while text:
        if text[0] == " ":
            if value and value[0] != " ":
                raise Unparsed(value)
            text, value = text.lstrip(" "), value.lstrip(" ")
            continue
        if not value or value[0] != text[0]:
            raise Unparsed(value)
        text, value = text[1:], value[1:]
    return value


def nanoseconds(digits: str) -> int:
    """A fraction's digits as nanoseconds (past the ninth, dropped)."""
    return int(digits[:9].ljust(9, "0"))


def zone(value: str, element: str) -> tuple[int, str]:
    """A zone offset (seconds east of UTC) as the element reads it; `Z07:00`, `Z0700` and `Z07` also take a
    literal `Z` for UTC (Go's ISO 8601 zones; not those with seconds)."""
    if element in ("Z07:00", "Z0700", "Z07") and value[:1] == "Z":
        return 0, value[1:]
    shape = element.lstrip("Z-")
    width = {"07:00:00": 9, "070000": 7, "07:00": 6, "0700": 5, "07": 3}[shape]
    text = value[:width]
    digits = text[1:3] + text[4:6] + text[7:9] if ":" in shape else text[1:]
    if len(text) < width or text[0] not in "+-" or not digits.isdigit() or not digits.isascii() \
            or (":" in shape and text[3::3] != ":" * len(text[3::3])):
        raise Unparsed(value)
    hours, minutes, seconds = int(digits[:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    offset = hours * 3600 + minutes * 60 + seconds
    return (-offset if text[0] == "-" else offset), value[width:]


def parse(layout: str, value: str) -> int:
    """`time.Parse(layout, value)` as nanoseconds since the epoch; Unparsed when Go's would fail."""
    year, month, day, yday, hour, minute, second, nsec, pm, offset = 0, 1, 1, 0, 0, 0, 0, 0, None, 0
    parts = tokens(layout)
    for index, part in enumerate(parts):
        if part == "2006":
            if len(value) < 4 or not value[:4].isdigit() or not value[:4].isascii():
                raise Unparsed(value)
            year, value = int(value[:4]), value[4:]
        elif part == "06":
            got, value = number(value, True)
            year = got + (1900 if got >= 69 else 2000)
        elif part in ("01", "1"):
            month, value = number(value, part == "01")
            if not 1 <= month <= 12:
                raise Unparsed("month out of range")
        elif part in ("January", "Jan"):
            names = MONTHS if part == "January" else tuple(m[:3] for m in MONTHS)
            found = next((n for n in names if value[:len(n)].lower() == n.lower()), None)
            if found is None:
                raise Unparsed(value)
            month, value = names.index(found) + 1, value[len(found):]
        elif part in ("Monday", "Mon"):
            names = DAYS if part == "Monday" else tuple(d[:3] for d in DAYS)
            found = next((n for n in names if value[:len(n)].lower() == n.lower()), None)
            if found is None:
                raise Unparsed(value)
            value = value[len(found):]
        elif part in ("02", "_2", "2"):
            if part == "_2" and value[:1] == " ":
                value = value[1:]
            day, value = number(value, part == "02")
        elif part == "002":
            if len(value) < 3 or not value[:3].isdigit():
                raise Unparsed(value)
            yday, value = int(value[:3]), value[3:]
        elif part in ("15", "03", "3"):
            hour, value = number(value, part == "03")
            if hour > (23 if part == "15" else 12):
                raise Unparsed("hour out of range")
        elif part in ("04", "4"):
            minute, value = number(value, part == "04")
            if minute > 59:
                raise Unparsed("minute out of range")
        elif part in ("05", "5"):
            second, value = number(value, part == "05")
            if second > 59:
                raise Unparsed("second out of range")
            following = parts[index + 1] if index + 1 < len(parts) else ""
            if (len(value) >= 2 and value[0] in ".," and "0" <= value[1] <= "9"
                    and not FRACTION.fullmatch(following)):
                digits = re.match(r"[0-9]+", value[1:]).group(0)  # type: ignore[union-attr]
                nsec, value = nanoseconds(digits), value[1 + len(digits):]
        elif part in ("PM", "pm"):
            word = value[:2]
            if word.upper() not in ("AM", "PM") or (part == "PM") != word.isupper():
                raise Unparsed(value)
            pm, value = word.upper() == "PM", value[2:]
        elif part == "MST":
            zone_name = re.match(r"[A-Z]{3,5}|UTC", value)
            if zone_name is None:
                raise Unparsed(value)
            value = value[zone_name.end():]
        elif part.lstrip("Z-").startswith("07"):
            offset, value = zone(value, part)
        elif FRACTION.fullmatch(part):
            if part[1] == "9":
                if len(value) < 2 or value[0] not in ".," or not ("0" <= value[1] <= "9"):
                    continue
                digits = re.match(r"[0-9]+", value[1:]).group(0)  # type: ignore[union-attr]
            else:
                digits = value[1:len(part)]
                if len(value) < len(part) or value[0] not in ".," or not digits.isdigit():
                    raise Unparsed(value)
            nsec, value = nanoseconds(digits), value[1 + len(digits):]
        else:
            value = literal(value, part)
    if value:
        raise Unparsed(f'extra text: "{value}"')
    if pm is not None:
        hour = hour % 12 + (12 if pm else 0)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= MONTH_DAYS[month - 1] + (month == 2 and leap):
        raise Unparsed("day out of range")
    days = civil_days(year, 1, 1) + yday - 1 if yday else civil_days(year, month, day)
    return (days * 86400 + hour * 3600 + minute * 60 + second - offset) * NS + nsec


def civil_days(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the date of the proleptic Gregorian calendar (year 0 included, as Go's)."""
    year -= month <= 2
    era = year // 400  # Python's // floors: the era of a negative year needs no correction
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def kubelet_time(line: str) -> tuple[int | None, str]:
    """The kubelet's timestamp prefix of a log line (`timestamps=true`), as nanoseconds, and the line after it;
    (None, the line) without one."""
    found = KUBELET.match(line)
    if found is None:
        return None, line
    try:
        return parse(RFC3339_NANO, found.group(1)), line[found.end():]
    except Unparsed:
        return None, line


def rfc3339(ns: int) -> str:
    """Go's RFC 3339 with nanoseconds, UTC (`time.RFC3339Nano`): the fraction without its trailing zeros."""
    seconds, fraction = divmod(ns, NS)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{fraction:09d}".rstrip("0") if fraction else "") + "Z"
