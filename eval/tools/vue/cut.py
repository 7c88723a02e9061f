"""Cut Vue documentation pages (vuejs/docs, vuejs-translations/docs-ko; VitePress Markdown) into passages.

Same scheme as eval/tools/react/cut.py (split at ## / ### headings, then paragraphs and code blocks packed greedily
into passages of 200-1200 characters), with the VitePress/Vue handling these pages need:
* front matter removed; the page title is the text of the "# " heading; heading anchors {#...} removed;
  HTML comments removed;
* page-level <script>/<style> blocks (imports of the live demos) and <div class="demo"> blocks (rendered live
  demos, template markup with {{ }} placeholders) removed - the counterpart of React's Sandpack;
* the API-preference wrappers <div class="options-api"> / <div class="composition-api"> and every other HTML tag
  or Vue component (<VueSchoolLink>, <ScrimbaLink>, <details>, <summary>, <sup class="vt-badge"/> ...) lose their
  markup and keep their text - but never inside a code fence or an inline `code` span;
* custom containers (::: tip / ::: warning / ::: info / ::: details / ::: code-group, closing :::) lose their
  marker lines; a container's own title (::: tip Note) is kept as a line of text;
* links to the online Playground and Template Explorer (play.vuejs.org, sfc.vuejs.org, template-explorer.vuejs.org,
  whose URL encodes a whole app or template) keep their text only; other links are kept as written;
* code-fence meta after the language ({2-4}, [npm], :line-numbers) removed; code fences are kept with the prose
  around them;
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
    text = re.sub(r'\[([^\]\n]*)\]\(https?://(?:play|sfc|template-explorer)\.vuejs\.org/[^)\s]*\)', r'\1', text)
    text = re.sub(r'</?[A-Za-z][\w.-]*(\s[^<>]*?)?/?>', '', text, flags=re.S)
    return re.sub(r'\x00(\d+)\x00', lambda m: spans[int(m.group(1))], text)


def clean(md, lang):
    if md.startswith('---'):
        end = md.find('\n---', 3)
        md = md[end + 4:]
    # 1) line level, fence aware: page title, <script>/<style> blocks, demo divs, container markers
    title, out_lines, infence = '', [], False
    drop, depth = None, 0
    for line in md.split('\n'):
        s = line.strip()
        if s.startswith('```'):
            infence = not infence
            if drop is None:
                out_lines.append(line)
            continue
        if infence:
            if drop is None:
                out_lines.append(line)
            continue
        if drop == 'div':
            depth += len(re.findall(r'<div\b', s)) - len(re.findall(r'</div>', s))
            if depth <= 0:
                drop = None
            continue
        if drop:
            if re.search(rf'</{drop}>', s):
                drop = None
            continue
        m = re.match(r'^<(script|style)\b[^>]*>', s)
        if m:
            if not re.search(rf'</{m.group(1)}>', s):
                drop = m.group(1)
            continue
        if re.match(r'^<div\s+class="demo"', s):
            depth = len(re.findall(r'<div\b', s)) - len(re.findall(r'</div>', s))
            if depth > 0:
                drop = 'div'
            continue
        m = re.match(r'^:::+\s*([\w-]*)\s*(.*)$', s)
        if m:
            if m.group(2).strip() and m.group(1) != 'code-group':
                out_lines.append(m.group(2).strip())
                out_lines.append('')
            continue
        m = re.match(r'^#\s+(.+?)\s*$', line)
        if m and not title:
            title = re.sub(r'\s*\{#[^}]*\}', '', m.group(1)).strip()
            title = _strip_tags_prose(title).strip()
            continue
        out_lines.append(line)
    md = '\n'.join(out_lines)
    # 2) prose: anchors, comments, tags; code: fence meta
    res = []
    for is_code, seg in _split_fences(md):
        if is_code:
            lines = seg.split('\n')
            m = re.match(r'^(\s*```[\w-]*)', lines[0])
            lines[0] = m.group(1) if m else lines[0]
            res.append('\n'.join(lines))
        else:
            seg = re.sub(r'[ \t]*\{#[\w.-]*\}', '', seg)
            seg = re.sub(r'<!--.*?-->', '', seg, flags=re.S)
            seg = _strip_tags_prose(seg)
            seg = '\n'.join(ln.rstrip() for ln in seg.split('\n'))
            res.append(seg)
    return title, '\n'.join(res)


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


def passages(git_dir, commit, path, lang, cleaner=None):
    """``cleaner``: another site's clean(md, lang) -> (title, md) (eval/tools/ts/cut.py); default this one's."""
    title, md = (cleaner or clean)(show(git_dir, commit, path), lang)
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
