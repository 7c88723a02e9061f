from hanrag.language import detect_lang, hanja_ratio, script_counts


def test_korean():
    assert detect_lang("갑목은 양의 나무이며 큰 나무에 비유한다.") == "ko"


def test_korean_with_hanja_terms_stays_ko():
    assert detect_lang("갑목(甲木)이 인월(寅月)에 태어나면 병화(丙火)를 용신(用神)으로 본다.") == "ko"


def test_chinese_and_hanja_only():
    assert detect_lang("甲木參天，脫胎要火。春不容金，秋不容土。") == "zh"
    assert detect_lang("木生火，火生土") == "zh"


def test_english_and_no_letters():
    assert detect_lang("Roll back with kubectl rollout undo deployment/api.") == "en"
    assert detect_lang("12345 !!! ---") == "en"
    assert detect_lang("") == "en"


def test_mixed_english_with_some_korean():
    # 4 Hangul syllables among ~60 letters: under 20 %, so en
    assert detect_lang("The deployment runbook (배포 절차) explains kubectl rollout undo and status checks.") == "en"
    # mostly Korean with English terms: ko
    assert detect_lang("배포가 실패하면 kubectl rollout undo 명령으로 이전 리비전으로 되돌린다.") == "ko"


def test_ratio_over_letters_not_spaces_digits_punctuation():
    # 2 Hangul of 9 letters (22 %) -> ko, whatever the digits and punctuation around them
    text = "가나 abcdefg 1234567890 !!!!!!!!!! .........."
    assert script_counts(text).letters == 9
    assert detect_lang(text) == "ko"


def test_only_first_2000_chars():
    assert detect_lang("a" * 2000 + "가" * 5000) == "en"


def test_hanja_ratio():
    assert hanja_ratio("甲木") == 1.0
    assert hanja_ratio("甲木 용신") == 0.5
    assert hanja_ratio("") == 0.0
    assert abs(hanja_ratio("甲木 2024?") - 2 / 7) < 1e-9


def test_default_for_too_little_prose():
    # a dozen syllables between two code blocks: too few letters to decide on, the document's language decides
    assert detect_lang("그 다음 레플리카셋을 생성한다.", default="en") == "en"
    assert detect_lang("그 다음 레플리카셋을 생성한다.") == "ko"
    # enough letters: the text decides, whatever the default
    text = "레플리카셋을 손쉽게 스케일 업 또는 다운하는 방법은 필드를 업데이트하는 것이다."
    assert detect_lang(text, default="en") == "ko"


def test_script_share_agrees_with_script_counts():
    from hanrag.language import script_share

    texts = ("배포가 실패하면 kubectl rollout undo 명령으로 되돌린다.", "甲木參天，脫胎要火。 갑목", "kubectl get pods",
             "", "123 !!")
    for text in texts:
        counts = script_counts(text)
        assert script_share(text, "hangul") == counts.ratio("hangul")
        assert script_share(text, "cjk") == counts.ratio("cjk")
