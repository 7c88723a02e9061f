"""Cut TypeScript handbook pages (microsoft/TypeScript-Website, its Korean translation in
microsoft/TypeScript-Website-Localizations; Markdown with twoslash code samples) into passages.

Same scheme as eval/tools/vue/cut.py, whose splitting and packing this module runs (split at ## / ### headings, then
paragraphs and code blocks packed greedily into passages of 200-1200 characters); only the cleaning differs:
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
import importlib.util
import os
import re

_spec = importlib.util.spec_from_file_location(
    'vue_cut', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'vue', 'cut.py'))
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)
DROPPED_UNTRANSLATED = base.DROPPED_UNTRANSLATED


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
    for is_code, seg in base._split_fences(md):
        if is_code:
            res.append(_twoslash(seg))
        else:
            seg = re.sub(r'<!--.*?-->', '', seg, flags=re.S)
            seg = base._strip_tags_prose(seg)
            seg = re.sub(r'^#{4,6}\s+', '', seg, flags=re.M)
            seg = '\n'.join(ln.rstrip() for ln in seg.split('\n'))
            res.append(seg)
    # a fence quoted inside a blockquote ("> ```ts twoslash") is not seen as a fence above: its markup goes here
    md = '\n'.join(res)
    md = re.sub(r'^(>\s*```[\w-]*)[ \t]+twoslash[^\n]*$', r'\1', md, flags=re.M)
    md = re.sub(r'^>\s*//\s*(@\w+|\^[?|]|-{3,}cut).*\n', '', md, flags=re.M)
    return title, md


def passages(git_dir, commit, path, lang):
    return base.passages(git_dir, commit, path, lang, cleaner=clean)
