"""Snapshots, commits and pages of the two TypeScript tuning sets (A: English corpus, B: Korean corpus; no page
shared)."""
EN_GIT = '/work/.mirror/microsoft+TypeScript-Website/repo'                # github.com/microsoft/TypeScript-Website
KO_GIT = '/work/.mirror/microsoft+TypeScript-Website-Localizations/repo'  # its Korean translation
EN_REPO, KO_REPO = 'microsoft/TypeScript-Website', 'microsoft/TypeScript-Website-Localizations'
EN_COMMIT = '1f8e642574ce992bfd573a96b5e3de43d8ac044a'
KO_COMMIT = '3a509241d3dd0c39219a5e3eb64c0e3dab88a5f7'

# set A -> eval/tune_ko2en_ts (English pages only)
PAGES_A = [
    'handbook-v2/Narrowing',
    'handbook-v2/Object Types',
    'handbook-v2/Classes',
    'handbook-v2/Type Manipulation/Conditional Types',
    'handbook-v2/Type Manipulation/Mapped Types',
    'handbook-v2/Type Manipulation/Template Literal Types',
    'reference/Utility Types',
    'reference/Decorators',
    'reference/Enums',
    'reference/Declaration Merging',
    'project-config/Project References',
    "declaration-files/Do's and Don'ts",
    'reference/Mixins',
    'tutorials/DOM Manipulation',
    'get-started/TS for Functional Programmers',
]
# set B -> eval/tune_en2ko_ts (Korean pages only)
PAGES_B = [
    'handbook-v2/Everyday Types',
    'handbook-v2/More on Functions',
    'handbook-v2/Type Manipulation/Generics',
    'handbook-v2/Type Manipulation/Keyof Type Operator',
    'handbook-v2/Type Manipulation/Typeof Type Operator',
    'handbook-v2/Type Manipulation/Indexed Access Types',
    'reference/Type Compatibility',
    'reference/Type Inference',
    'reference/Iterators and Generators',
    'reference/Symbols',
    'reference/Namespaces',
    'reference/Triple-Slash Directives',
    'project-config/Configuring Watch',
    'javascript/JSDoc Reference',
    'declaration-files/Publishing',
    'declaration-files/Library Structures',
    'reference/Variable Declarations',
    'reference/Modules',
    'reference/Module Resolution',
    'reference/JSX',
    'handbook-v2/Basics',
    'get-started/TS for JS Programmers',
    'tutorials/Migrating from JavaScript',
]
assert not set(PAGES_A) & set(PAGES_B)


def path(page, lang):
    return (f'packages/documentation/copy/en/{page}.md' if lang == 'en'
            else f'docs/documentation/ko/{page}.md')
