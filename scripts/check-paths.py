#!/usr/bin/env python3
"""check-paths.py: every repository path a document or a comment names exists.

Looks at the Markdown documents (their relative links, resolved from the
document's folder, and the repository paths they name in text) and at
the sources (the repository paths their comments and docstrings name:
"lib/sandbox.c", "docs/network.md"). A path that does not exist is a
signpost to nowhere: the check fails naming the file, the line and the
path. Placeholders ("tests/unit/test-<area>.c") are not paths.

    python3 scripts/check-paths.py [ROOT]
"""
import os
import re
import subprocess
import sys

TOP = ['include', 'base', 'lib', 'runtime', 'mcp', 'serve', 'src', 'tests', 'docs', 'scripts', 'bench',
       'providers', 'python', '.ci']
MENTION = re.compile(r'(?<![A-Za-z0-9_./-])((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_])' % '|'.join(re.escape(t) for t in TOP))
LINK = re.compile(r'\]\(([^)\s#]+)(?:#[^)]*)?\)')
EXTS = ('.c', '.h', '.md', '.mjs', '.js', '.py', '.sh', '.json', '.toml', '.def', '.yml', '.yaml', '.txt', '.build')


def tracked(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True, check=True).stdout
        return [f for f in out.split('\n') if f]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ('.git', 'node_modules') and not d.startswith('build')]
            found += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
        return found


def comment_start(line):
    """Where a comment starts in a line of source, or -1."""
    s = line.lstrip()
    if s.startswith(('*', '/*', '//', '#')):
        return 0
    found = [i for i in (line.find('//'), line.find('/*'), line.find(' # ')) if i >= 0]
    return min(found) if found else -1


def exists(root, rel):
    return os.path.exists(os.path.join(root, rel))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    missing = []
    for rel in tracked(root):
        if not rel.endswith(EXTS) or rel.startswith(('tests/fixtures/', 'tests/fuzz/corpus')) or rel == 'package-lock.json':
            continue
        path = os.path.join(root, rel)
        try:
            with open(path, encoding='utf-8') as fh:
                lines = fh.read().split('\n')
        except (OSError, UnicodeDecodeError):
            continue
        is_doc = rel.endswith('.md')
        for no, line in enumerate(lines, 1):
            # in a source file, only what its comments name (its code may
            # name paths of a test's own temporary trees)
            at = 0 if is_doc or rel.endswith('.def') else comment_start(line)
            if at < 0:
                continue
            for m in MENTION.finditer(line, at):
                p = m.group(1).rstrip('.')
                if '.' not in os.path.basename(p):
                    continue  # a folder, or a command, not a file named by its path
                if not p.endswith(EXTS):
                    continue
                if not exists(root, p):
                    missing.append(f'{rel}:{no}: names {p}, which does not exist')
            if rel.endswith('.md'):
                for m in LINK.finditer(line):
                    target = m.group(1)
                    if re.match(r'^[a-z]+:', target) or target.startswith('/'):
                        continue
                    full = os.path.normpath(os.path.join(os.path.dirname(rel), target))
                    if not exists(root, full):
                        missing.append(f'{rel}:{no}: links to {target}, which does not exist')
    for m in missing:
        print(m, file=sys.stderr)
    if missing:
        print(f'check-paths: {len(missing)} path(s) named that do not exist', file=sys.stderr)
        return 1
    print('check-paths: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
