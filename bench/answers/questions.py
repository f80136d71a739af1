"""The questions of `bench answers`: short things people ask a voice assistant, each with
the answers it accepts, written here by hand (never by a model).

44 in English and 20 in simplified Chinese: facts, arithmetic, units, definitions and
everyday how-to. An alternative is matched leniently (bench/answers/score.py: case, number
words and Chinese numerals vs digits, full-width forms, punctuation); for definitions and
how-to questions the alternatives are keywords, any one of which counts, and they are
chosen so that repeating the question does not pass ("boil" is not a keyword of "How do I
boil an egg?"). `QUICK` names the handful a `--quick` run asks per language.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("fact", "arithmetic", "units", "definition", "howto")


@dataclass(frozen=True)
class Question:
    id: str
    lang: str  # "en" or "zh"
    kind: str  # one of KINDS
    text: str
    accepted: tuple[str, ...]
    keywords: bool = False  # alternatives need only start a word ("boil" ~ "boiling")


def _q(id: str, kind: str, text: str, accepted: str, keywords: bool = False) -> Question:
    """`accepted`: the alternatives, separated by "|"."""
    return Question(id, id.split("-")[0], kind, text, tuple(accepted.split("|")), keywords)


QUESTIONS: tuple[Question, ...] = (
    # English: facts
    _q("en-capital-france", "fact", "What is the capital of France?", "Paris"),
    _q("en-capital-japan", "fact", "What is the capital of Japan?", "Tokyo"),
    _q("en-red-planet", "fact", "Which planet is known as the Red Planet?", "Mars"),
    _q("en-largest-planet", "fact", "What is the largest planet in our solar system?", "Jupiter"),
    _q("en-romeo", "fact", "Who wrote Romeo and Juliet?", "Shakespeare"),
    _q("en-gold-symbol", "fact", "What is the chemical symbol for gold?", "Au"),
    _q("en-continents", "fact", "How many continents are there?", "seven"),
    _q("en-boiling-c", "fact", "What is the boiling point of water in Celsius?", "100"),
    _q("en-plants-gas", "fact", "What gas do plants absorb from the air?", "carbon dioxide|CO2"),
    _q("en-largest-ocean", "fact", "What is the largest ocean on Earth?", "Pacific"),
    _q("en-pyramids", "fact", "In which country are the pyramids of Giza?", "Egypt"),
    _q("en-blue-yellow", "fact", "What colour do you get when you mix blue and yellow?", "green"),
    _q("en-spider-legs", "fact", "How many legs does a spider have?", "eight"),
    _q("en-freezing-f", "fact", "What is the freezing point of water in Fahrenheit?", "32"),
    _q("en-mona-lisa", "fact", "Who painted the Mona Lisa?", "Leonardo|da Vinci"),
    # English: arithmetic
    _q("en-two-plus-two", "arithmetic", "What is two plus two?", "four"),
    _q("en-seven-eight", "arithmetic", "What is seven times eight?", "fifty-six"),
    _q("en-hundred-minus", "arithmetic", "What is one hundred minus thirty-five?", "65"),
    _q("en-half-fifty", "arithmetic", "What is half of fifty?", "25"),
    _q("en-twelve-three", "arithmetic", "What is twelve divided by three?", "4"),
    _q("en-nine-squared", "arithmetic", "What is nine squared?", "81"),
    _q("en-fifteen-plus", "arithmetic", "What is fifteen plus twenty-seven?", "42"),
    _q("en-ten-percent", "arithmetic", "What is ten percent of two hundred?", "20"),
    # English: units
    _q("en-minutes-hour", "units", "How many minutes are in an hour?", "60"),
    _q("en-cm-metre", "units", "How many centimetres are in a metre?", "100"),
    _q("en-leap-year", "units", "How many days are in a leap year?", "366"),
    _q("en-grams-kg", "units", "How many grams are in a kilogram?", "1000"),
    _q("en-seconds-minute", "units", "How many seconds are in a minute?", "60"),
    _q("en-hours-day", "units", "How many hours are in a day?", "24"),
    _q("en-days-week", "units", "How many days are in a week?", "7"),
    _q("en-inches-foot", "units", "How many inches are in a foot?", "12"),
    # English: definitions (keywords unless the answer is one phrase)
    _q(
        "en-photosynthesis",
        "definition",
        "What is photosynthesis?",
        "sunlight|light energy|glucose|sugar|carbon dioxide",
        keywords=True,
    ),
    _q("en-noun", "definition", "What is a noun?", "person|place|thing", keywords=True),
    _q("en-thermometer", "definition", "What does a thermometer measure?", "temperature"),
    _q(
        "en-synonym",
        "definition",
        "What is a synonym?",
        "same meaning|similar meaning|same or similar meaning|means the same",
        keywords=True,
    ),
    _q("en-gravity", "definition", "What is gravity?", "force|attract|pull", keywords=True),
    _q("en-cpu", "definition", "What does CPU stand for?", "central processing unit"),
    _q("en-mammal", "definition", "What is a mammal?", "milk|warm blooded|hair|fur", keywords=True),
    # English: everyday how-to (keywords)
    _q(
        "en-boil-egg",
        "howto",
        "How do I boil an egg?",
        "water|minute|pot|saucepan|pan",
        keywords=True,
    ),
    _q("en-hiccups", "howto", "How can I get rid of hiccups?", "water|breath|sugar", keywords=True),
    _q(
        "en-tea",
        "howto",
        "How do I make a cup of tea?",
        "boil|kettle|hot water|steep|tea bag|teabag|brew",
        keywords=True,
    ),
    _q("en-burn", "howto", "How should I treat a small burn?", "cool|cold|water", keywords=True),
    _q(
        "en-nosebleed",
        "howto",
        "How do I stop a nosebleed?",
        "pinch|lean forward|press",
        keywords=True,
    ),
    _q(
        "en-frozen-phone",
        "howto",
        "What should I do if my phone is frozen?",
        "restart|reboot|power|turn it off|switch it off|force",
        keywords=True,
    ),
    # Chinese: facts
    _q("zh-capital-france", "fact", "法国的首都是哪里？", "巴黎"),
    _q("zh-capital-china", "fact", "中国的首都是哪里？", "北京"),
    _q("zh-largest-ocean", "fact", "地球上最大的海洋是什么？", "太平洋"),
    _q("zh-jingyesi", "fact", "《静夜思》的作者是谁？", "李白"),
    _q("zh-panda-food", "fact", "大熊猫主要吃什么？", "竹"),
    _q("zh-sunrise", "fact", "太阳从哪个方向升起？", "东"),
    _q("zh-water-formula", "fact", "水的化学式是什么？", "H2O"),
    # Chinese: arithmetic
    _q("zh-three-five", "arithmetic", "三加五等于几？", "八"),
    _q("zh-nine-nine", "arithmetic", "九乘以九等于多少？", "81"),
    _q("zh-hundred-minus", "arithmetic", "一百减去四十等于多少？", "60"),
    _q("zh-twenty-by-four", "arithmetic", "二十除以四等于几？", "5"),
    # Chinese: units
    _q("zh-months-year", "units", "一年有几个月？", "十二"),
    _q("zh-days-week", "units", "一个星期有几天？", "7"),
    _q("zh-metres-km", "units", "一公里等于多少米？", "1000"),
    _q("zh-minutes-hour", "units", "一小时有多少分钟？", "60"),
    _q("zh-hours-day", "units", "一天有多少个小时？", "24"),
    _q("zh-grams-kg", "units", "一公斤等于多少克？", "1000"),
    # Chinese: definitions and everyday how-to (keywords)
    _q(
        "zh-photosynthesis",
        "definition",
        "什么是光合作用？",
        "阳光|光能|二氧化碳|葡萄糖|氧气|有机物",
        keywords=True,
    ),
    _q("zh-cold", "howto", "感冒了应该怎么办？", "休息|喝水|多喝|睡眠|医生|就医", keywords=True),
    _q("zh-rice", "howto", "怎么煮米饭？", "水|淘米|电饭煲|锅", keywords=True),
)


# A --quick run: a handful per language, of different kinds.
QUICK = (
    "en-capital-france", "en-two-plus-two", "en-minutes-hour", "en-tea",
    "zh-capital-china", "zh-three-five", "zh-days-week", "zh-cold",
)  # fmt: skip
