"""Cut React documentation pages (react.dev / ko.react.dev, MDX-flavoured Markdown) into passages.

Same scheme as eval/tools/k8s/build.py (split at ## / ### headings, then paragraphs and code blocks packed
greedily into passages of 200-1200 characters), with the MDX handling these pages need:
* front matter removed (title kept); heading anchors {/*...*/} and MDX comments removed;
* <Sandpack>/<SandpackRSC> blocks (whole runnable example apps, several files of code) removed;
* <YouWillLearn>, <Recap> (page-level lists of links/summaries) and <InlineToc/> removed;
* <Challenges> opens a section titled as the site renders it ("Try out some challenges" / "챌린지 도전하기");
* every other MDX component tag (<Intro>, <Note>, <Pitfall>, <DeepDive>, <Solution>, <Hint>, <Recipes>,
  <Diagram>, <CodeStep>, <ConsoleBlock>, <CanaryBadge/> ...) and HTML tag removed, its text kept - but never inside a
  code fence or an inline `code` span, so JSX in code stays intact;
* code-fence meta after the language ({2-4}, [[1, 8, "..."]], {expectedErrors: ...}) removed; code fences outside
  Sandpack are kept with the prose around them;
* a passage with fewer than 100 characters outside code fences (a bare code block) is dropped;
* Korean pages only: a prose block left untranslated (at least 150 Latin letters and under 10% Hangul among its
  letters, inline code and link targets not counted) is dropped, so that the Korean corpus holds no English twin text
  (at the pinned commit this removes two English parameter bullets on the useLayoutEffect page).
Usage (library): passages(git_dir, commit, path) -> [dict(text, title, path)].
"""
import re
import subprocess

MIN, MAX, MIN_PROSE = 200, 1200, 100
DROP_BLOCKS = ('Sandpack', 'SandpackRSC', 'YouWillLearn', 'Recap')
CHALLENGES = {'en': 'Try out some challenges', 'ko': '챌린지 도전하기'}


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
    # protect inline code spans
    spans = []

    def keep(m):
        spans.append(m.group(0))
        return f'\x00{len(spans) - 1}\x00'
    text = re.sub(r'`[^`\n]+`', keep, text)
    text = re.sub(r'</?[A-Za-z][\w.]*(\s[^<>]*?)?/?>', '', text, flags=re.S)
    return re.sub(r'\x00(\d+)\x00', lambda m: spans[int(m.group(1))], text)


def clean(md, lang):
    title = ''
    if md.startswith('---'):
        end = md.find('\n---', 3)
        fm, md = md[3:end], md[end + 4:]
        m = re.search(r'^title:\s*(.+)$', fm, re.M)
        if m:
            title = m.group(1).strip().strip('"\'')
    segs = _split_fences(md)
    # 1) drop whole blocks (Sandpack etc.), which may contain fences: work on a line level with fence awareness
    out_lines, drop, infence = [], None, False
    for line in md.split('\n'):
        s = line.strip()
        if s.startswith('```'):
            infence = not infence
        if drop:
            if not infence and re.match(rf'^</{drop}>\s*$', s):
                drop = None
            continue
        if not infence:
            m = re.match(r'^<(' + '|'.join(DROP_BLOCKS) + r')\b[^>]*>\s*$', s)
            if m:
                drop = m.group(1)
                continue
            if re.match(r'^<InlineToc\s*/>\s*$', s):
                continue
            if re.match(r'^<Challenges\b[^>]*>\s*$', s):
                out_lines.append('## ' + CHALLENGES[lang])
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
            seg = re.sub(r'\s*\{/\*.*?\*/\}', '', seg, flags=re.S)
            seg = re.sub(r'<!--.*?-->', '', seg, flags=re.S)
            seg = _strip_tags_prose(seg)
            res.append(seg)
    del segs
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
            if len(m.group(1)) == 2:
                h2, h3 = m.group(2), ''
            else:
                h3 = m.group(2)
        else:
            buf.append(line)
    secs.append((h2, h3, '\n'.join(buf)))
    return secs


def prose_len(text):
    return sum(len(s) for c, s in _split_fences(text) if not c)


def passages(git_dir, commit, path, lang):
    title, md = clean(show(git_dir, commit, path), lang)
    out = []
    for h2, h3, body in sections(md):
        if h2 in ('---',):
            continue
        chunks, cur = [], ''
        for b in blocks_of(body):
            if b.strip() == '---' or (lang == 'ko' and untranslated(b)):
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
