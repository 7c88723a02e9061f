"""Snapshots, commits and pages of the two Vue tuning sets (A: English corpus, B: Korean corpus; no page shared)."""
EN_GIT = '/work/.mirror/vuejs+docs/repo'                   # snapshot of github.com/vuejs/docs
KO_GIT = '/work/.mirror/vuejs-translations+docs-ko/repo'   # snapshot of github.com/vuejs-translations/docs-ko
EN_REPO, KO_REPO = 'vuejs/docs', 'vuejs-translations/docs-ko'
EN_COMMIT = '01e098a967951ea92d09b100b8e7d82c7a3369a2'
KO_COMMIT = '6e646acb5687510feda533281faa546b26ea243c'

# set A -> eval/tune_ko2en_vue (English pages only)
PAGES_A = [
    'essentials/computed',
    'essentials/watchers',
    'essentials/list',
    'essentials/forms',
    'essentials/event-handling',
    'components/props',
    'components/events',
    'components/v-model',
    'components/slots',
    'components/provide-inject',
    'built-ins/keep-alive',
    'built-ins/teleport',
    'built-ins/transition',
    'reusability/composables',
    'extras/reactivity-in-depth',
    'extras/web-components',
    'scaling-up/ssr',
    'best-practices/performance',
    'typescript/composition-api',
]
# set B -> eval/tune_en2ko_vue (Korean pages only)
PAGES_B = [
    'essentials/application',
    'essentials/reactivity-fundamentals',
    'essentials/template-syntax',
    'essentials/class-and-style',
    'essentials/conditional',
    'essentials/lifecycle',
    'essentials/template-refs',
    'essentials/component-basics',
    'components/registration',
    'components/attrs',
    'components/async',
    'built-ins/suspense',
    'reusability/custom-directives',
    'reusability/plugins',
    'scaling-up/state-management',
    'scaling-up/testing',
    'scaling-up/tooling',
    'extras/render-function',
    'extras/rendering-mechanism',
    'extras/composition-api-faq',
    'best-practices/security',
    'best-practices/accessibility',
    'typescript/overview',
]
assert not set(PAGES_A) & set(PAGES_B)


def path(page):
    return f'src/guide/{page}.md'
