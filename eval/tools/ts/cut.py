"""Cut TypeScript handbook pages (microsoft/TypeScript-Website, its Korean translation in
microsoft/TypeScript-Website-Localizations; Markdown with twoslash code samples) into passages.

Same scheme as eval/tools/vue/cut.py (split at ## / ### headings, then paragraphs and code blocks packed greedily
into passages of 200-1200 characters), with what these pages need:
* front matter removed; the page title is its ``title:`` field;
* HTML comments and tags (<blockquote class=bg-reading>, <details> ...) removed with their text kept, never inside
  a code fence or an inline `code` span; #### / ##### headings inside a section keep their text as a line;
* twoslash markup inside code fences removed: compiler directives (// @errors: 2345, // @filename: a.ts,
  // @strict: false ...), the // ---cut--- marker and the code above it, and query lines (//   ^?); fence meta after
  the language ("ts twoslash") removed; code fences are kept with the prose around them;
* a passage with fewer than 100 characters outside code fences (a bare code block) is dropped;
* Korean pages only: a prose block left untranslated (at least 150 Latin letters and under 10% Hangul among its
  letters, inline code and link targets not counted) is dropped.
Usage (library): passages(git_dir, commit, path, lang) -> [dict(text, title, path)].
"""
import re
import subprocess

MIN, MAX, MIN_PROSE = 200, 1200, 100


def show(git_dir, commit, path):
    return subprocess.run(['git', '--git-dir=' + git_dir, 'show', f'{commit}:{path}'],
                          capture_output=True, check=True).stdout.decode('utf-8')


def _split_fences(md):
    """[(is_code, text)] alternating prose / fenced-code segments (fence lines included in code)."""
    out, cur, infence = [], [], False
    for line in md.split('\n'):
        if line.strip().startswith('```'):
            if not infence:
                out.append((False, '\n'.join(cur)))
                cur = [line]
                infence = True
            else:
                cur.append(line)
                out.append((True, '\n'.join(cur)))
                cur = []
                infence = False
            continue
        cur.append(line)
    out.append((infence, '\n'.join(cur)))
    return out


def _strip_tags_prose(text):
    spans = []

    def keep(m):
        spans.append(m.group(0))
        return f'\x00{len(spans) - 1}\x00'
    text = re.sub(r'`[^`\n]+`', keep, text)
    text = re.sub(r'</?[A-Za-z][\w.-]*(\s[^<>]*?)?/?>', '', text, flags=re.S)
    return re.sub(r'\x00(\d+)\x00', lambda m: spans[int(m.group(1))], text)


def _twoslash(code):
    """A fenced code block without its twoslash markup (see module docstring)."""
    lines = code.split('\n')
    m = re.match(r'^(\s*```[\w-]*)', lines[0])
    first = m.group(1) if m else lines[0]
    body = lines[1:-1] if len(lines) > 1 else []
    for i, ln in enumerate(body):
        if re.match(r'^\s*//\s*-{3,}cut-{3,}', ln):
            body = body[i + 1:]
            break
    body = [ln for ln in body
            if not re.match(r'^\s*//\s*@\w+', ln) and not re.match(r'^\s*//\s*\^[?|]', ln)
            and not re.match(r'^\s*//\s*-{3,}cut', ln)]
    return '\n'.join([first, *body, lines[-1]] if len(lines) > 1 else [first])


def clean(md, lang):
    title = ''
    if md.startswith('---'):
        end = md.find('\n---', 3)
        m = re.search(r'^title:\s*(.+?)\s*$', md[:end], flags=re.M)
        title = m.group(1).strip().strip('"\'') if m else ''
        md = md[end + 4:]
    res = []
    for is_code, seg in _split_fences(md):
        if is_code:
            res.append(_twoslash(seg))
        else:
            seg = re.sub(r'<!--.*?-->', '', seg, flags=re.S)
            seg = _strip_tags_prose(seg)
            seg = re.sub(r'^#{4,6}\s+', '', seg, flags=re.M)
            seg = '\n'.join(ln.rstrip() for ln in seg.split('\n'))
            res.append(seg)
    # a fence quoted inside a blockquote ("> ```ts twoslash") is not seen as a fence above: its markup goes here
    md = '\n'.join(res)
    md = re.sub(r'^(>\s*```[\w-]*)[ \t]+twoslash[^\n]*$', r'\1', md, flags=re.M)
    md = re.sub(r'^>\s*//\s*(@\w+|\^[?|]|-{3,}cut).*\n', '', md, flags=re.M)
    return title, md


def blocks_of(text):
    out, cur, infence = [], [], False
    for line in text.split('\n'):
        if line.strip().startswith('```'):
            infence = not infence
            cur.append(line)
            if not infence:
                out.append('\n'.join(cur))
                cur = []
            continue
        if infence:
            cur.append(line)
            continue
        if not line.strip():
            if cur:
                out.append('\n'.join(cur))
                cur = []
        else:
            cur.append(line)
    if cur:
        out.append('\n'.join(cur))
    res = []
    for b in out:
        b = b.rstrip()
        if not b.strip():
            continue
        if len(b) <= MAX:
            res.append(b)
            continue
        piece = ''
        for ln in re.split(r'(?<=\n)|(?<=[.다]\s)', b):
            if len(piece) + len(ln) > MAX and piece:
                res.append(piece.rstrip())
                piece = ''
            piece += ln
        if piece.strip():
            res.append(piece.rstrip())
    return res


def untranslated(block):
    """A prose block of a Korean page that was left in English (see module docstring)."""
    if block.lstrip().startswith('```'):
        return False
    p = re.sub(r'`[^`]*`', '', block)
    p = re.sub(r'\]\([^)]*\)', ']', p)
    h = len(re.findall(r'[\uac00-\ud7a3]', p))
    latin = len(re.findall(r'[A-Za-z]', p))
    return latin >= 150 and h < 0.1 * (h + latin)


def sections(md):
    secs, h2, h3, buf, infence = [], '', '', [], False
    for line in md.split('\n'):
        if line.strip().startswith('```'):
            infence = not infence
        m = None if infence else re.match(r'^(#{2,3})\s+(.+?)\s*$', line)
        if m:
            secs.append((h2, h3, '\n'.join(buf)))
            buf = []
            head = re.sub(r'\s*(\\\*)+$', '', m.group(2)).strip()  # escaped "**" marker (API-style badge)
            if len(m.group(1)) == 2:
                h2, h3 = head, ''
            else:
                h3 = head
        else:
            buf.append(line)
    secs.append((h2, h3, '\n'.join(buf)))
    return secs


def prose_len(text):
    return sum(len(s) for c, s in _split_fences(text) if not c)


DROPPED_UNTRANSLATED = []


def passages(git_dir, commit, path, lang):
    title, md = clean(show(git_dir, commit, path), lang)
    out = []
    for h2, h3, body in sections(md):
        chunks, cur = [], ''
        for b in blocks_of(body):
            if b.strip() == '---':
                continue
            if lang == 'ko' and untranslated(b):
                DROPPED_UNTRANSLATED.append((path, b))
                continue
            if cur and len(cur) + 2 + len(b) > MAX:
                chunks.append(cur)
                cur = b
            else:
                cur = (cur + '\n\n' + b) if cur else b
        if cur:
            chunks.append(cur)
        if len(chunks) >= 2 and len(chunks[-1]) < MIN and len(chunks[-2]) + 2 + len(chunks[-1]) <= MAX:
            chunks[-2] = chunks[-2] + '\n\n' + chunks[-1]
            chunks.pop()
        t = title + (' — ' + h2 if h2 else '') + (' > ' + h3 if h3 else '')
        for c in chunks:
            c = c.strip()
            if MIN <= len(c) <= MAX and prose_len(c) >= MIN_PROSE:
                out.append(dict(text=c, title=t, path=path))
    return out
