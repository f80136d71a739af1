"""How a transcript reads at a pause: cut short, a question, or a finished sentence.

Whisper's early transcript of the speech up to a pause shows how it reads; turn_words.py
weighs that against how it sounds. The rules are for English and Mandarin (Chinese has
no spaces: its rules look at the ends of the text and its last clause, and count
characters where English counts words).
"""

from __future__ import annotations

import re

from app.text_units import is_cjk_letter

# Words an English sentence does not end on: articles, possessives, prepositions,
# conjunctions, "to" and the copula ("what I want to know is...").
_OPEN_ENDED = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "its",
        "this",
        "these",
        "those",
        "of",
        "to",
        "for",
        "with",
        "in",
        "on",
        "at",
        "by",
        "from",
        "about",
        "into",
        "onto",
        "over",
        "under",
        "after",
        "before",
        "between",
        "through",
        "and",
        "or",
        "but",
        "so",
        "because",
        "if",
        "than",
        "that",
        "which",
        "whether",
        "while",
        "when",
        "where",
        "is",
        "are",
        "was",
        "were",
        "am",
        "be",
    ]
)
_TRAILING_OFF = re.compile(r"(\.\.\.|…|[-–—,，、：])\s*$")
# A short sentence that opens with one of these announces more to come ("And so, my
# fellow Americans, ..."; Whisper writes it "And so my fellow Americans." or not).
_LEAD_INS = frozenset(["and", "so", "but", "or", "because", "then", "well"])
LEAD_IN_WORDS = 5
# A Mandarin word is about 1.6 characters in running text, so a lead-in of at most five
# words is one of at most eight characters ("所以我的同胞们。" is seven).
ZH_CHARS_PER_WORD = 1.6
_SENTENCE_END = re.compile(r"([.!?][\"')\]]*|[。！？．][”’」』）》\"')\]]*)\s*$")
_LAST_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？．])(?![”’」』）》])")

# Mandarin (simplified and traditional, as Whisper writes either). A final question
# particle ends a turn as "?" does; 吧 and 呢 also end statements ("我们走吧"), which
# are finished too.
_ZH_QUESTION_PARTICLES = ("吗", "嗎", "呢", "吧")
# Conjunctions a Mandarin sentence does not end on ("我们先吃饭，然后"): the speaker
# goes on. The two-character ones also make a short sentence a lead-in ("所以我们…").
_ZH_CONNECTIVES = (
    "然后", "然後", "因为", "因為", "所以", "但是", "而且", "还有", "還有", "或者", "如果",
    "虽然", "雖然", "可是", "不过", "不過", "并且", "並且", "以及", "要是", "还是", "還是",
    "于是", "於是", "和",
)  # fmt: skip
# Words that end in 和 without it being "and": "今天很暖和" is finished.
_ZH_NOT_AND = (
    "暖和", "温和", "溫和", "平和", "柔和", "缓和", "緩和", "随和", "隨和", "总和", "總和",
    "讲和", "講和", "调和", "調和", "祥和",
)  # fmt: skip
# 就是 / 的是 as "is" before what it introduces ("我想说的就是", "我想知道的是"), like
# English "is"; alone 就是 is "exactly" ("对，就是。"), and 真的是 / 有的是 are finished.
_ZH_COPULAS = ("就是", "的是")
_ZH_NOT_COPULA = ("真的是", "有的是")
_ZH_FILLER = ("那个", "那個")  # "um", when it is a clause of its own after another
# 一 + a measure word after other words is the indefinite article ("我想买一个" is "I
# want to buy a"): the noun is still to come. After a number (十一个), a demonstrative or
# 第 ("给我那一本", "第一个"), or alone (the answer "一个。"), it stands for a noun said
# before: finished. Other numbers ("我要三个") are answers as often: no rule. 次 is left
# out: "再试一次" ends on it, finished.
_ZH_ARTICLE = re.compile(
    r"(?<![这這那哪第零一二三四五六七八九十百千万萬亿億两兩\d])一[个個本只隻件条條张張位]$"
)
_ZH_FINAL_MARKS = "。．.！!~～”’」』）》\"' \t\n"  # what may follow a sentence's last word
_CLAUSE_MARKS = re.compile(r"[，,、：:；;。．.！!？?…—]+")


# English questions Whisper's early pass wrote without their "?" ("How many days are
# there in a week"): a sentence that opens with a question word and an auxiliary ("what
# is", "where do"), "how" and a quantity ("how many"), or an auxiliary and its subject
# ("can you", "is it"). "When I get home" and "what I want" open subordinate clauses, not
# questions; "do" and "have" also open imperatives ("Do your homework", "Have a look"),
# so they count only before a personal pronoun. Fewer than QUESTION_MIN_WORDS words are
# as often a question's opening ("Can you ... help me"; "Do you know ... where it is").
QUESTION_MIN_WORDS = 4
_WH = r"(?:what|where|when|who|whom|whose|which|why|how)"
_AUX = r"(?:is|are|was|were|am|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had)"
_SUBJECT = (
    r"(?:i|you|he|she|it|we|they|there|this|that|these|those|the|a|an|my|your|his|her|our|their)"
)
_QUESTION_FORM = re.compile(
    rf"^(?:{_WH}(?:'s|'re|\s+{_AUX}\b)|how\s+(?:many|much|long|far|often|old)\b"
    rf"|(?!do\b|have\b){_AUX}\s+{_SUBJECT}\b|(?:do|have)\s+(?:i|you|he|she|it|we|they)\b)"
)


def last_sentence(text: str) -> str:
    """The text after its last sentence end ("" for no words)."""
    sentences = [s for s in _LAST_SENTENCE.split(text) if s.strip()]
    return sentences[-1] if sentences else ""


def question_form(text: str) -> bool:
    """Whether the last sentence of English words is worded as a question (see above)."""
    words = re.findall(r"[a-z']+", last_sentence(text).lower())
    return len(words) >= QUESTION_MIN_WORDS and _QUESTION_FORM.match(" ".join(words)) is not None


def is_question(text: str) -> bool:
    """Ends with "?" or "？", or with a Mandarin final particle ("你好吗", "是你吧。")."""
    return text.endswith(("?", "？")) or text.rstrip(_ZH_FINAL_MARKS).endswith(
        _ZH_QUESTION_PARTICLES
    )


def _zh_unfinished(text: str) -> bool:
    """Whether Mandarin text ends on a word it does not end a sentence on."""
    core = text.rstrip(_ZH_FINAL_MARKS)  # "然后。" still ends on 然后
    clauses = [c.strip() for c in _CLAUSE_MARKS.split(core)]
    clause = clauses[-1]
    if core.endswith(_ZH_CONNECTIVES) and not core.endswith(_ZH_NOT_AND):
        return True
    if core.endswith(_ZH_COPULAS) and len(clause) > 2 and not core.endswith(_ZH_NOT_COPULA):
        return True
    if clause in _ZH_FILLER and len(clauses) > 1:
        return True
    return len(clause) > 2 and _ZH_ARTICLE.search(clause) is not None


def _latin_tail(text: str) -> str:
    """The text after its last CJK character: where the English rules look."""
    for i in range(len(text) - 1, -1, -1):
        if is_cjk_letter(text[i]):
            return text[i + 1 :]
    return text


def _word_count(text: str) -> float:
    """Words, with Mandarin characters counted as ZH_CHARS_PER_WORD to a word."""
    words = re.findall(r"[a-z0-9']+", text.lower())
    return len(words) + sum(map(is_cjk_letter, text)) / ZH_CHARS_PER_WORD


def is_lead_in(sentence: str) -> bool:
    """A short sentence that opens with "and", "so", "所以"... (see _LEAD_INS)."""
    first = next((c for c in sentence if c.isalnum()), " ")
    if is_cjk_letter(first):
        opens = sentence[sentence.index(first) :].startswith(
            tuple(c for c in _ZH_CONNECTIVES if len(c) > 1)  # "和平。" is not "and"
        )
    else:
        words = re.findall(r"[a-z0-9']+", sentence.lower())
        opens = bool(words) and words[0] in _LEAD_INS
    return opens and _word_count(sentence) <= LEAD_IN_WORDS


def sounds_unfinished(text: str) -> bool:
    """Whether a transcript reads as a phrase cut short (a question never does)."""
    text = text.strip()
    if not text or is_question(text):
        return False
    if _TRAILING_OFF.search(text) or _zh_unfinished(text):
        return True
    # "a table for 2." ends on "2"; "我想去 Paris and" on "and", "and 我想去北京" on no word
    words = re.findall(r"[a-z0-9']+", _latin_tail(text).lower())
    return bool(words) and words[-1] in _OPEN_ENDED


def _mandarin_ending(text: str) -> bool:
    """Whether the text ends in Chinese: a CJK character with no Latin word after it
    ("...超50%" does, "我想去 Paris" does not)."""
    tail = _latin_tail(text)
    return len(tail) < len(text) and re.search(r"[^\W\d_]", tail) is None


def reads_finished(text: str) -> bool:
    """Whether Whisper wrote the transcript as a finished sentence (., !, ?, 。, ！ or ？)
    that is more than a short lead-in ("And so my fellow Americans.", "所以我的同胞们。").

    Mandarin needs no mark: Whisper writes it unpunctuated (whisper-base wrote no final
    mark on any of `bench asr --language zh`'s nine clips, finished sentences all), so
    there a missing mark says nothing and only the Mandarin rules above (a connective, an
    article, a lead-in) read a sentence as unfinished."""
    text = text.strip()
    if not (_SENTENCE_END.search(text) or _mandarin_ending(text)) or sounds_unfinished(text):
        return False
    return not is_lead_in(last_sentence(text))


# Requests worded as one: the last sentence opens with an imperative a person asks an
# assistant with ("Tell me a joke", "Name a fruit that is yellow"), "please" or "I want
# to know". Like question_form, at least QUESTION_MIN_WORDS words: "Tell me" alone is an
# opening. "Do" and "have" open requests as often as plans ("Have a look at this"): not.
_REQUEST_FORM = re.compile(
    r"^(?:please\s+)?(?:tell|give|name|list|explain|describe|say|show|translate|define|"
    r"spell|count|recommend|suggest|compare|summarize|summarise|remind|find|calculate|"
    r"convert|play|set|turn|read|write|help)\b|^please\b|^i\s+(?:want|would like|need)"
    r"\s+to\s+know\b"
)
# Mandarin requests and questions: a clause of five characters or more that opens with
# 请 / 告诉我 / 给我 / 帮我, or of four or more that ends with a question word
# ("北京的人口是多少", "这是什么"). 你能 / 你可以 ("can you") open as often as they ask.
_ZH_REQUEST_OPENINGS = ("请", "請", "告诉我", "告訴我", "给我", "給我", "帮我", "幫我")
_ZH_QUESTION_ENDINGS = (
    "什么", "什麼", "多少", "几个", "幾個", "哪里", "哪裡", "哪儿", "怎么样", "怎麼樣", "为什么",
    "為什麼", "谁", "誰",
)  # fmt: skip


def plainly_asks(text: str) -> bool:
    """Whether the last sentence is plainly a question or a request, worded as one
    ("How many days are there in a week", "Tell me a joke.", "请给我讲个笑话"), and not cut
    short: turn_words ends such a turn after a short doubt (Patience.plain_wait_ms)."""
    if sounds_unfinished(text):
        return False
    if question_form(text):
        return True
    sentence = last_sentence(text)
    words = re.findall(r"[a-z']+", sentence.lower())
    if len(words) >= QUESTION_MIN_WORDS and _REQUEST_FORM.match(" ".join(words)):
        return True
    core = sentence.strip().rstrip(_ZH_FINAL_MARKS)
    clause = [c.strip() for c in _CLAUSE_MARKS.split(core)][-1]
    opens = len(clause) >= 5 and clause.startswith(_ZH_REQUEST_OPENINGS)
    return opens or (len(clause) >= 4 and clause.endswith(_ZH_QUESTION_ENDINGS))
