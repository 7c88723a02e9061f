"""tune_en2ko_react: English queries over the Korean React pages (set B), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set;
relevance-1 passages were found by regex-grepping the corpus for the query's key terms (Korean words and the English
identifiers the Korean docs keep) and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of react-ko-NNNN.
kind: term = keyword query, question = how-to / natural question, paraphrase = the situation in other words.
"""

Q = [
    # Lifecycle of Reactive Effects
    ("how React restarts an effect when the roomId prop changes", "question", "0005", "0003 0004 0134"),
    ("stop thinking about mount and unmount, think in start/stop synchronization cycles", "paraphrase", "0007",
     "0006 0001 0134"),
    ("should analytics logVisit go in the same effect as the chat connection", "question", "0011", "0037"),
    ("can location.pathname or ref.current be an effect dependency", "question", "0015", ""),
    ("event listener inside an effect keeps seeing an outdated checkbox value", "paraphrase", "0021",
     "0022 0065 0066"),
    # Removing Effect Dependencies
    ("prove to the linter a value isn't reactive by moving it out of the component", "term", "0027",
     "0028 0017 0144"),
    ("why is silencing the exhaustive-deps lint rule a bad idea", "question", "0030", "0029 0019 0065 0066 0145"),
    ("effect shows the success toast again when the user switches dark mode", "paraphrase", "0032", "0033"),
    ("one effect fetching both cities and areas split into two effects", "term", "0035", "0036 0034 0037"),
    ("chat reconnects on every incoming message because messages is a dependency", "question", "0039", "0038"),
    ("object dependency recreated every render Object.is false", "term", "0045", "0044 0046 0047 0148"),
    ("options object prop from parent: destructure primitives before the effect", "term", "0048", "0049 0051"),
    # Separating Events from Effects
    ("should sending a chat message live in an event handler or an effect", "question", "0055", "0054 0056 0058"),
    ("switching theme reconnects the chat, notification with useEffectEvent", "term", "0061", "0060"),
    ("log each page visit with the cart size without logging again when the cart changes", "paraphrase", "0063",
     "0062 0064 0150 0151"),
    ("effect event limitations: don't pass them to other components or hooks", "term", "0067", ""),
    ("what should I name effect events, onMount vs onTick", "question", "0070", "0069"),
    # Referencing Values with Refs
    ("where to keep the interval id of a stopwatch so the stop button can clear it", "question", "0073",
     "0198 0199 0076"),
    ("ref vs state differences table", "term", "0074", "0075 0199"),
    ("two debounced buttons cancel each other's pending message", "paraphrase", "0080", "0199"),
    ("read the latest input text inside a delayed timeout", "question", "0081", ""),
    ("don't read or write ref.current during rendering", "term", "0077", "0074 0075 0197 0199 0200"),
    # State as a Snapshot
    ("calling setNumber(number + 1) three times only adds one", "question", "0084", "0083 0165"),
    ("alert in a timeout still shows the old number after setState", "question", "0085", "0172"),
    # Updating Objects in State
    ("changing a property of the object held in state doesn't redraw anything", "paraphrase", "0088",
     "0087 0173 0095"),
    ("update one form field and keep the rest with object spread", "question", "0090", "0167 0098"),
    ("update nested object property immutably person.artwork.city", "term", "0091", "0092 0093 0167"),
    ("Immer useImmer draft concise updates", "term", "0093", "0096"),
    # Choosing the State Structure
    ("isSending and isSent both true, replace with a status variable", "term", "0099", "0097"),
    ("initializing state from a prop and it never updates", "paraphrase", "0100", "0101 0104"),
    ("store selectedId instead of the selected item object", "term", "0102", "0105 0097"),
    ("removing an item buried several levels deep means copying every parent object", "paraphrase", "0103",
     "0097 0093"),
    # Passing Data Deeply with Context
    ("prop drilling alternative", "term", "0108", "0107 0109 0117"),
    ("what to try before reaching for context", "question", "0115", ""),
    ("context use cases theming current account routing", "term", "0116", ""),
    # Responding to Events
    ("onClick={handleClick()} fires during render instead of on click", "question", "0119", "0120 0129 0174"),
    ("naming event handler props like onPlayMovie", "term", "0122", "0118"),
    ("keep a click from reaching the parent element's handler", "paraphrase", "0125", "0126 0129"),
    ("stopPropagation vs preventDefault form submit reload", "term", "0127", "0125"),
    # useEffect
    ("order of setup and cleanup on mount, update and unmount", "question", "0133", "0134 0130 0157"),
    ("sync a non-React map widget zoom level, no cleanup needed", "term", "0139", ""),
    ("fetch data in useEffect ignore flag race condition", "term", "0140", "0034"),
    ("drawbacks of fetching inside effects, waterfalls and no caching", "question", "0141", "0142"),
    ("no dependency array vs empty array vs [a, b]: when does the effect run", "question", "0146",
     "0145 0131 0013"),
    ("render different content on the client than on the server didMount hydration", "term", "0152", "0223"),
    ("effect runs after every render, how to find which dependency changes", "question", "0154", "0155 0194"),
    ("cleanup runs even though the component did not unmount", "question", "0157", "0133 0130"),
    # useState
    ("expensive initial state recomputed every render useState initializer", "term", "0168", "0159"),
    ("track how a prop changed since last render, prevCount set during render", "term", "0170", "0171 0162"),
    ("logged state right after calling setCount is still the old value", "question", "0172", "0163 0161"),
    ("Too many re-renders error onClick={handleClick()}", "term", "0174", "0119 0129"),
    ("trying to keep a function in state but React calls it", "question", "0177", ""),
    # useCallback
    ("memo child still re-renders because the handler prop is a new function each render", "paraphrase", "0183",
     "0181 0182 0188"),
    ("difference between useMemo and useCallback", "question", "0185", "0184"),
    ("memoized callback depends on todos, use an updater to drop the dependency", "term", "0189", ""),
    ("useCallback returns a new function every render", "question", "0193", "0194"),
    ("call useCallback inside a loop for each item", "term", "0195", "0180"),
    # useRef
    ("passing a ref to my own input component gives null", "question", "0204", "0202"),
    ("avoid re-creating an expensive object as the useRef initial value", "term", "0203", ""),
    # useContext
    ("useContext ignores a provider rendered in the same component", "term", "0207", "0206 0214"),
    ("createContext default value when there is no provider", "term", "0210", "0111 0205 0215"),
    ("context value object recreated every render useMemo useCallback", "term", "0212", "0213"),
    ("context returns undefined even though a default value was set", "question", "0215", "0210"),
    # useLayoutEffect
    ("position a tooltip above or below depending on its measured height without flicker", "paraphrase", "0219",
     "0220 0217 0158"),
    ("useLayoutEffect does nothing on the server warning", "term", "0222", "0223"),
    # useSyncExternalStore
    ("show whether the browser is online navigator.onLine", "question", "0227", "0228 0229"),
    ("getSnapshot result should be cached error, infinite loop", "term", "0231", "0225"),
    ("subscribe function called again on every re-render", "question", "0232", "0225"),
]
