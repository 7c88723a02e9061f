"""Snapshots, commits and pages of the two React tuning sets (A: English corpus, B: Korean corpus; no page shared)."""
EN_GIT = '/work/.mirror/reactjs+react.dev/repo'   # snapshot of github.com/reactjs/react.dev
KO_GIT = '/work/.mirror/reactjs+ko.react.dev/repo'  # snapshot of github.com/reactjs/ko.react.dev
EN_REPO, KO_REPO = 'reactjs/react.dev', 'reactjs/ko.react.dev'
EN_COMMIT = '12d692da47e77cdc558b928fcfbaf4e71c6d0cec'
KO_COMMIT = '2e8c873c3cea6703d1c94d01b5d5716259005c8e'

# set A -> eval/tune_ko2en_react (English pages only)
PAGES_A = [
    'learn/synchronizing-with-effects',
    'learn/you-might-not-need-an-effect',
    'learn/reusing-logic-with-custom-hooks',
    'learn/manipulating-the-dom-with-refs',
    'learn/preserving-and-resetting-state',
    'learn/queueing-a-series-of-state-updates',
    'learn/rendering-lists',
    'learn/keeping-components-pure',
    'reference/react/useMemo',
    'reference/react/useReducer',
    'reference/react/memo',
    'reference/react/Suspense',
    'reference/react/useTransition',
    'reference/react/StrictMode',
]
# set B -> eval/tune_en2ko_react (Korean pages only)
PAGES_B = [
    'learn/lifecycle-of-reactive-effects',
    'learn/removing-effect-dependencies',
    'learn/separating-events-from-effects',
    'learn/referencing-values-with-refs',
    'learn/state-as-a-snapshot',
    'learn/updating-objects-in-state',
    'learn/choosing-the-state-structure',
    'learn/passing-data-deeply-with-context',
    'learn/responding-to-events',
    'reference/react/useEffect',
    'reference/react/useState',
    'reference/react/useCallback',
    'reference/react/useRef',
    'reference/react/useContext',
    'reference/react/useLayoutEffect',
    'reference/react/useSyncExternalStore',
]
assert not set(PAGES_A) & set(PAGES_B)


def path(page):
    return f'src/content/{page}.md'
