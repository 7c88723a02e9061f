"""tune_en2ko_vue: English queries over the Korean Vue pages (set B), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set;
relevance-1 passages were found by regex-grepping the corpus for the query's key terms (Korean words and the English
identifiers the Korean docs keep) and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of vue-ko-NNNN.
kind: term = keyword query, question = how-to / natural question, paraphrase = the situation in other words.
"""

Q = [
    # Creating a Vue Application
    ("app.config.errorHandler catch errors from every component", "term", "0003", ""),
    ("can several Vue apps live on the same page with separate config", "question", "0004", ""),
    # Reactivity Fundamentals
    ("why do refs need .value instead of plain variables", "question", "0010", "0007"),
    ("nextTick wait for DOM update after changing state", "term", "0013", ""),
    ("reactive() limitations primitives replacing object destructuring", "term", "0016", "0015"),
    ("ref nested in plain object renders [object Object]1 in template", "term", "0018", "0017"),
    ("debounced method shared between component instances interferes", "paraphrase", "0019", ""),
    # Template Syntax
    ("v-html raw HTML XSS warning", "term", "0022", "0188"),
    ("can template expressions access window globals", "question", "0030", ""),
    # Class and Style Bindings
    ("toggle CSS class with :class object isActive", "term", "0036", "0037"),
    ("component renders two root elements, which one gets the class passed by the parent", "paraphrase", "0038",
     "0083"),
    # Conditional Rendering / Lifecycle
    ("v-if vs v-show toggle cost vs initial render cost", "term", "0046", "0045"),
    ("how to conditionally render several elements without a wrapper element", "question", "0044", ""),
    ("can I register onMounted inside a setTimeout callback", "question", "0049", ""),
    # Template Refs
    ("template ref is null on first render watchEffect", "term", "0053", "0051"),
    ("parent can't access child methods through template ref in script setup defineExpose", "term", "0055",
     "0054"),
    ("collect refs of elements rendered with v-for into an array", "question", "0056", ""),
    # Components Basics / Registration
    ("switch between tab components dynamically component :is", "term", "0068", ""),
    ("custom row component inside a table gets pushed outside the table in an HTML-written template",
     "paraphrase", "0072", "0069"),
    ("in-DOM template kebab-case for camelCase props and PascalCase components", "term", "0070", "0061 0076"),
    ("global vs local component registration tree-shaking", "term", "0075", "0074"),
    # Fallthrough Attributes
    ("fallthrough attributes class merged onto child root element", "term", "0077", "0078 0079"),
    ("how do I put the attributes a parent passes onto an inner element instead of the root", "question", "0081",
     "0082"),
    ("useAttrs is not reactive, can I watch attrs", "question", "0084", ""),
    # Async Components / Suspense
    ("defineAsyncComponent loadingComponent errorComponent delay timeout", "term", "0087", "0085"),
    ("load a component from the server only when it is actually rendered", "paraphrase", "0085", "0086"),
    ("dashboard shows several spinners and content pops in at different times", "paraphrase", "0090", "0093 0089"),
    ("Suspense timeout prop fallback after default content replaced", "term", "0093", ""),
    ("handle errors from async setup inside Suspense", "question", "0095", ""),
    ("nesting order RouterView Transition KeepAlive Suspense", "term", "0096", ""),
    # Custom Directives / Plugins
    ("v-focus custom directive vs autofocus attribute", "term", "0100", "0098"),
    ("what happens when a custom directive is used on a component with multiple roots", "question", "0103", ""),
    ("write a plugin that adds a global $translate method app.config.globalProperties", "term", "0105",
     "0104 0106"),
    # State Management
    ("any component can mutate the shared store object; keep mutations in named store methods", "paraphrase",
     "0110", "0109"),
    ("Pinia vs Vuex for a new project", "question", "0111", ""),
    # Testing
    ("white-box vs black-box component tests", "term", "0115", "0117"),
    ("should component tests check private state or rely on snapshots", "question", "0118", "0119 0117"),
    ("Vitest vs Cypress component testing speed browser runner", "term", "0120", "0116 0136"),
    ("test a composable that uses lifecycle hooks or inject", "question", "0128", ""),
    ("Playwright Cypress end-to-end recommendation", "term", "0125", "0124 0126 0136"),
    # Tooling
    ("Vue CLI maintenance mode migrate to Vite", "term", "0131", "0130 0217"),
    ("VS Code extension for Vue 3 disable Vetur", "term", "0133", "0214"),
    # Render Functions & JSX
    ("h() function arguments create vnode", "term", "0144", "0145"),
    ("render the same paragraph 20 times, can I reuse one vnode", "question", "0148", ""),
    ("Vue JSX differs from React JSX class instead of className", "term", "0150", "0151"),
    ("pass slots to a child component in a render function", "question", "0155", "0154 0156"),
    ("functional component signature props slots emit attrs", "term", "0161", "0162 0163"),
    # Rendering Mechanism
    ("why Vue recommends templates over render functions", "question", "0166", "0143 0020"),
    ("compiler marks which nodes can change so re-render skips the static parts of the tree", "paraphrase",
     "0170", "0167 0168 0171"),
    # Composition API FAQ
    ("is Composition API functional programming", "question", "0173", ""),
    ("one feature's code scattered across data methods watch in a large component, hard to navigate",
     "paraphrase", "0175", "0176"),
    ("Composition API vs React Hooks stale closures dependency arrays", "term", "0181", "0182"),
    # Security
    ("user-provided string as component template arbitrary JavaScript execution", "term", "0184", "0191"),
    ("does Vue escape HTML in mustache interpolation", "question", "0185", "0186 0188"),
    ("sanitize user-provided URL javascript: href", "term", "0189", ""),
    ("attacker styles a link as an invisible box over the login button", "paraphrase", "0190", ""),
    # Accessibility
    ("skip link focus back to top on route change", "term", "0194", ""),
    ("why avoid placeholders in form inputs", "question", "0203", ""),
    ("useId unique ids aria-labelledby reusable component", "term", "0201", "0200 0202"),
    # Using Vue with TypeScript
    ("Vite dev server does not type check TypeScript vue-tsc", "term", "0213", "0135"),
    ("type checking in the webpack loader slows the build and errors don't match the IDE", "paraphrase", "0217",
     ""),
    ("tsconfig isolatedModules noImplicitThis options", "term", "0215", "0216"),
]
