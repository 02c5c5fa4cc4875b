#!/usr/bin/env python3
"""embed.py IN OUT NAME: writes a C header declaring `static const char NAME[]`
holding IN's text (used for the code-interpreter kernels). Non-printable
bytes become three-digit octal escapes, which, unlike \\x, never swallow the
characters after them."""
import sys


def c_line(line: str) -> str:
    out = []
    for b in line.encode("utf-8"):
        ch = chr(b)
        if ch == "\\" or ch == '"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 0x20 <= b < 0x7F and ch != "?":  # '?' escaped: no trigraphs
            out.append(ch)
        else:
            out.append("\\%03o" % b)
    return '    "' + "".join(out) + '"'


src, dst, name = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
lines = [f"/* generated from {src.split('/')[-1]} by scripts/embed.py: do not edit */",
         f"static const char {name}[] ="]
lines += [c_line(l) for l in text.splitlines(keepends=True)]
lines[-1] += ";"
open(dst, "w").write("\n".join(lines) + "\n")
