"""Byte sizes as the command line and the daemon write them: "512K", "1M", "1.5MiB"."""

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse(text):
    """"512K", "1.5M", "2MiB", "4096" -> bytes; ValueError naming the text."""
    t = text.strip().upper().rstrip("B").rstrip("I")
    unit = t[-1] if t and t[-1] in UNITS else ""
    try:
        return int(float(t[:-1] if unit else t) * UNITS[unit])
    except ValueError:
        raise ValueError(f"\"{text}\" is not a size") from None


def text(n):
    """Bytes -> the shortest exact "M" or "K" form ("1M", "256K")."""
    return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n >> 10}K"
