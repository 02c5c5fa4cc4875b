#!/usr/bin/env python3
"""check-layers.py: the walls between abx's layers (../shared/DESIGN.md).

The front ends (src/, mcp/, serve/, oci/, and the Python SDK's python/) use only
the public header (include/abx/) and the base layer (base/): a front end
that names an internal header, or an identifier of libabx's internals
(abx__..., or an abx_... name the public header and the base layer do not
declare), fails this check with the file, the line and the name.

    python3 scripts/check-layers.py [ROOT]

Exit status 0 when the walls hold, 1 with one line per breach otherwise.
"""
import os
import re
import sys

FRONT_ENDS = ['src', 'mcp', 'serve', 'oci', 'python']
# Front ends that host others: the CLI runs the MCP server and abx serve.
HOSTS = {'src': ['mcp', 'serve']}
# Headers the build generates for a front end (mcp's embedded tool list).
GENERATED = {'tools_json.h', 'kernel_sources.h'}

IDENT = re.compile(r'\babx_[A-Za-z0-9_]+\b')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def strip_comments_and_strings(text):
    """C source with comments and string/char literals blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def declared(root):
    """The abx_ names the public header and the base layer declare."""
    names = set()
    for folder in ['include/abx', 'base']:
        d = os.path.join(root, folder)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.endswith(('.h', '.def')):
                with open(os.path.join(d, f), encoding='utf-8') as fh:
                    names.update(IDENT.findall(strip_comments_and_strings(fh.read())))
    return names


def headers(root, folder):
    d = os.path.join(root, folder)
    return {f for f in os.listdir(d) if f.endswith('.h')} if os.path.isdir(d) else set()


def check(root):
    allowed_names = declared(root)
    base_headers = headers(root, 'base')
    breaches = []
    for fe in FRONT_ENDS:
        d = os.path.join(root, fe)
        if not os.path.isdir(d):
            continue
        own = headers(root, fe)
        for host in HOSTS.get(fe, []):
            own |= headers(root, host)
        for dirpath, _, files in os.walk(d):
            for f in sorted(files):
                if not f.endswith(('.c', '.h', '.py')):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    text = fh.read()
                if f.endswith('.py'):
                    # the Python SDK reaches libabx through ctypes: only exported names
                    for no, line in enumerate(text.split('\n'), 1):
                        for name in re.findall(r'\babx__[A-Za-z0-9_]+\b', line):
                            breaches.append(f'{rel}:{no}: names the internal symbol {name}')
                    continue
                for m in INCLUDE.finditer(text):
                    h = m.group(1)
                    ok = h.startswith('abx/') or h in base_headers or h in own or h in GENERATED
                    if not ok:
                        no = text.count('\n', 0, m.start()) + 1
                        breaches.append(f'{rel}:{no}: includes the internal header "{h}"')
                code = strip_comments_and_strings(text)
                defined_here = set()
                for no, line in enumerate(code.split('\n'), 1):
                    for name in IDENT.findall(line):
                        if name in allowed_names or name in defined_here:
                            continue
                        if name.startswith('abx__'):
                            breaches.append(f'{rel}:{no}: names the internal symbol {name}')
                        else:
                            breaches.append(f'{rel}:{no}: names {name}, which neither abx.h nor the base layer declares')
                        defined_here.add(name)  # once per file is enough
    return breaches


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    breaches = check(root)
    for b in breaches:
        print(b, file=sys.stderr)
    if breaches:
        print(f'check-layers: {len(breaches)} breach(es) of the walls: front ends use include/abx/abx.h and base/ only '
              '(grow the public API instead)', file=sys.stderr)
        return 1
    print('check-layers: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
