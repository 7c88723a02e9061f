"""Cut both page lists into passages: corpus(lang) -> [dict(doc_id, text, source, title)]."""
from urllib.parse import quote

import cut
import pages as P


def corpus(lang):
    git, commit, repo, plist, prefix = ((P.EN_GIT, P.EN_COMMIT, P.EN_REPO, P.PAGES_A, 'ts-en') if lang == 'en'
                                        else (P.KO_GIT, P.KO_COMMIT, P.KO_REPO, P.PAGES_B, 'ts-ko'))
    out = []
    for page in plist:
        for x in cut.passages(git, commit, P.path(page, lang), lang):
            out.append(dict(doc_id=f'{prefix}-{len(out):04d}', text=x['text'],
                            source=f'https://github.com/{repo}/blob/{commit}/{quote(x["path"])}', title=x['title']))
    return out


if __name__ == '__main__':  # dump for reading: python3 corpus.py en > /tmp/en.txt
    import sys
    for c in corpus(sys.argv[1]):
        print(f"===== {c['doc_id']} | {c['title']} | {len(c['text'])}\n{c['text']}\n")
