"""The build's half of corpus links (hanrag.index.links): the corpus's words filed by sound."""

from __future__ import annotations

import json

from hanrag.index import links
from hanrag.text.loanword import english_key, hangul_key


def test_sound_keys_file_english_words_and_korean_loanwords_only() -> None:
    vocab = ["디플로이먼트", "롤백", "변수", "설정", "파드", "되다", "deploy"]
    texts = ["Roll back a Deployment with kubectl rollout undo.", "The rollback restores the previous ReplicaSet."]
    keys = links.sound_keys(vocab, [3, 2, 5, 4, 9, 9, 1], texts)
    assert keys["english"][english_key("deployment")] == ["deployment"]
    assert "rollback" in keys["english"][english_key("rollback")]
    assert keys["korean"] == {hangul_key("디플로이먼트"): ["디플로이먼트"], hangul_key("롤백"): ["롤백"]}
    # Sino-Korean words (변수, 설정), too-short keys (파드) and verbs (되다) are not loanwords; "with" is too short
    assert not {"변수", "설정", "파드", "되다"} & {w for ws in keys["korean"].values() for w in ws}
    assert all(w != "with" for ws in keys["english"].values() for w in ws)


def test_sound_keys_keep_the_most_used_words_within_the_bound(monkeypatch) -> None:
    monkeypatch.setattr(links, "MAX_BYTES", 400)
    words = [f"{a}{b}tection" for a in "bcdfgklmnprstvz" for b in "aeiou"]
    texts = [" ".join(words[: i + 1]) for i in range(len(words))]  # words[0] in every text, the last in one
    keys = links.sound_keys([], [], texts)
    kept = [w for ws in keys["english"].values() for w in ws]
    assert 0 < len(kept) < len(words)
    assert words[0] in kept and words[-1] not in kept
    assert len(json.dumps(keys)) <= 400
