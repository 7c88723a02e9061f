"""Front matter and YAML, bounded: the ``---`` block at the top of a Markdown file, read by the sources (for the
document's fields) and by the chunker (to keep it out of chunks).

YAML goes through :func:`load_yaml`, which composes the document itself: it bounds nesting and counts aliases at
their expanded size, so a "billion laughs" block costs milliseconds and one finding, never memory or minutes.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hanrag.records import Finding

_FM_OPEN = re.compile(r"\A---[ \t]*\n")
_FM_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)
# YAML bounds. Aliases share one node, so a 600-byte "billion laughs" front matter expands to 10^9
# values once constructed and walked (str(), rendering): the expanded size is counted while the
# document is composed, and a document over the cap is refused before it is constructed. Nesting is
# capped too: libyaml parses each level in time proportional to the depth (quadratic overall) and its
# composer recurses in C (100,000 levels end the process).
FRONT_MATTER_MAX_NODES = 10_000
YAML_MAX_NODES = 1_000_000  # and at most YAML_ALIAS_FACTOR x the nodes written out, whichever is larger
YAML_ALIAS_FACTOR = 4
YAML_MAX_DEPTH = 200


def front_matter_end(text: str) -> int:
    """Offset just past a leading YAML front matter block (``---`` … ``---``), 0 when none."""
    opening = _FM_OPEN.match(text)
    if not opening:
        return 0
    closing = _FM_CLOSE.search(text, opening.end())
    if not closing:
        return 0
    end = closing.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    return end


class YamlLimitError(yaml.YAMLError):
    """A YAML document over :data:`YAML_MAX_DEPTH` levels, over its node cap once aliases are expanded,
    or with an alias inside the node it names (a recursive structure)."""


class _BoundedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, with a value that looks like a date but is none (``2024-13-45``) kept as text
    and noted in :attr:`odd_values` instead of failing the whole document."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.odd_values: list[str] = []

    def construct_yaml_timestamp(self, node: Node) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:
            self.odd_values.append(f"{node.value!r} is not a valid date; kept as text")
            return self.construct_scalar(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _BoundedLoader.construct_yaml_timestamp)


def load_yaml(text: str, *, max_nodes: int = YAML_MAX_NODES, max_depth: int = YAML_MAX_DEPTH,
              notes: list[str] | None = None) -> Any:
    """One YAML document through the safe loader, bounded: :class:`YamlLimitError` (a ``yaml.YAMLError``)
    when it nests deeper than ``max_depth`` or expands (aliases counted at their full size) to more than
    ``max(max_nodes, YAML_ALIAS_FACTOR x nodes written)``. ``notes`` collects odd values kept as text."""
    loader = _BoundedLoader(text)
    try:
        root = _compose(loader, max_nodes, max_depth)
        data = None if root is None else loader.construct_document(root)
        if notes is not None:
            notes.extend(loader.odd_values)
        return data
    finally:
        loader.dispose()


def _compose(loader: Any, max_nodes: int, max_depth: int) -> Node | None:
    """PyYAML's composer without recursion, counting every node at its expanded size as it goes."""
    ev = yaml.events
    loader.get_event()  # StreamStart
    if loader.check_event(ev.StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    anchors: dict[str, tuple[Node, int | None]] = {}  # size None: still open (an alias to it recurses)
    stack: list[list[Any]] = []  # [node, expanded size so far, anchor, pending mapping key]
    written = 0
    root: Node | None = None
    while root is None:
        event = loader.get_event()
        done: tuple[Node, int] | None = None
        if isinstance(event, ev.AliasEvent):
            node, size = anchors.get(event.anchor, (None, None))
            if node is None:
                raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                  event.start_mark)
            if size is None:
                raise YamlLimitError(f"recursive alias *{event.anchor} (a structure that contains itself)")
            done = (node, size)
        elif isinstance(event, ev.ScalarEvent):
            tag = event.tag if event.tag not in (None, "!") else loader.resolve(ScalarNode, event.value,
                                                                                 event.implicit)
            done = (ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style), 1)
            if event.anchor is not None:
                anchors[event.anchor] = done
        elif isinstance(event, ev.SequenceStartEvent | ev.MappingStartEvent):
            is_seq = isinstance(event, ev.SequenceStartEvent)
            kind = SequenceNode if is_seq else MappingNode
            tag = event.tag if event.tag not in (None, "!") else loader.resolve(kind, None, event.implicit)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = (node, None)
            stack.append([node, 1, event.anchor, None])
            if len(stack) > max_depth:
                raise YamlLimitError(f"nested more than {max_depth} levels deep")
        elif isinstance(event, ev.SequenceEndEvent | ev.MappingEndEvent):
            node, size, anchor, _ = stack.pop()
            node.end_mark = event.end_mark
            if anchor is not None:
                anchors[anchor] = (node, size)
            done = (node, size)
        if done is None:
            continue
        written += 1
        node, size = done
        if not stack:
            root = node
            break
        frame = stack[-1]
        frame[1] += size
        if frame[1] > max_nodes and frame[1] > YAML_ALIAS_FACTOR * written:
            raise YamlLimitError(f"over {max(max_nodes, YAML_ALIAS_FACTOR * written):,} values once its "
                                 "aliases are expanded (an alias bomb?)")
        if isinstance(frame[0], SequenceNode):
            frame[0].value.append(node)
        elif frame[3] is None:
            frame[3] = (node,)
        else:
            frame[0].value.append((frame[3][0], node))
            frame[3] = None
    loader.get_event()  # DocumentEnd
    if not loader.check_event(ev.StreamEndEvent):
        event = loader.get_event()
        raise yaml.composer.ComposerError("expected a single document in the stream", root.start_mark,
                                          "but found another document", event.start_mark)
    return root


def split_front_matter(text: str, rel: str) -> tuple[dict[str, Any], str, list[Finding]]:
    """``(front matter mapping, body, findings)``; the body keeps everything after the block.

    Front matter that is not valid YAML, not a mapping, or over the YAML bounds (:func:`load_yaml`)
    is ignored with a warning; a value that cannot be what it looks like (``date: 2024-13-45``) is kept
    as text with a warning. Either way the document is read."""
    end = front_matter_end(text)
    if not end:
        return {}, text, []
    opening = _FM_OPEN.match(text)
    assert opening is not None
    raw = text[opening.end() : end]
    raw = _FM_CLOSE.sub("", raw)
    notes: list[str] = []
    try:
        data = load_yaml(raw, max_nodes=FRONT_MATTER_MAX_NODES, notes=notes)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        why = "over hanrag's YAML limits" if isinstance(exc, YamlLimitError) else "not valid YAML"
        return (
            {},
            text[end:],
            [
                Finding(
                    rel,
                    "warning",
                    "bad-front-matter",
                    f"front matter is {why}: {exc}; ignored".splitlines()[0],
                    line=None if line is None else line + 2,
                )
            ],
        )
    findings = [Finding(rel, "warning", "bad-front-matter", f"front matter: {note}") for note in notes]
    if data is None:
        return {}, text[end:], findings
    if not isinstance(data, dict):
        return {}, text[end:], [Finding(rel, "warning", "bad-front-matter", "front matter is not a mapping; ignored")]
    return {str(k): v for k, v in data.items()}, text[end:], findings
