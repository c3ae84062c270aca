"""Small hand-made examples of every answer kind (10 each), in the CLUES shapes.

They stand in for the real data so the tests run without the zip; the texts are short so
that tiny models overfit them in a few seconds on CPU.
"""

from __future__ import annotations

import re

from fewshot_models.base import AdapterExample

SST_QUESTION = "positive or negative?"
MNLI_QUESTION = "entailment, contraction, or neutral?"  # (sic), as in CLUES
PEOPLE_Q = "List all the people names in the context"
ORG_Q = "List all the organizations in the context"
LOC_Q = "List all the locations in the context"

_SST = [
    ("a wonderful and moving film", "positive"),
    ("a dull and tedious mess", "negative"),
    ("truly great acting throughout", "positive"),
    ("boring lifeless and flat", "negative"),
    ("a charming delightful story", "positive"),
    ("an awful waste of time", "negative"),
    ("brilliant clever and funny", "positive"),
    ("clumsy stupid and tiresome", "negative"),
    ("an uplifting joyful ride", "positive"),
    ("painfully bad writing", "negative"),
]

_MNLI = [
    ("The man is playing a guitar on stage.", "A man plays music.", "entailment"),
    ("A woman is reading a book in the park.", "The woman is asleep at home.", "contradiction"),
    ("Two dogs run across the field.", "The dogs are chasing a ball.", "neutral"),
    ("The children are eating lunch at school.", "Kids are having a meal.", "entailment"),
    ("A chef cooks pasta in the kitchen.", "Nobody is cooking.", "contradiction"),
    ("The old car broke down on the highway.", "The driver was late for work.", "neutral"),
    ("Snow covers the mountain village.", "It is cold in the village.", "entailment"),
    ("The store closed early on Sunday.", "The store was open all night.", "contradiction"),
    ("A student writes an essay.", "The essay is about history.", "neutral"),
    ("The band played loud music all evening.", "There was music in the evening.", "entailment"),
]

_NER_SENTENCES = [
    ("John Smith met Mary Jones in Paris .", ["John Smith", "Mary Jones"], [], ["Paris"]),
    ("Acme Corp opened an office in Berlin and Berlin cheered .", [], ["Acme Corp"], ["Berlin"]),
    ("The weather was calm on Tuesday .", [], [], []),
    ("Peter Brown of Globex Industries flew to Tokyo .", ["Peter Brown"], ["Globex Industries"], ["Tokyo"]),
]

_SQUAD = [
    (
        "The Eiffel Tower was completed in 1889 in Paris by Gustave Eiffel .",
        "When was the Eiffel Tower completed ?",
        ["1889"],
    ),
    (
        "The river Nile flows north through Egypt into the Mediterranean Sea .",
        "Into which sea does the Nile flow ?",
        ["the Mediterranean Sea", "Mediterranean Sea"],
    ),
    (
        "Marie Curie won two Nobel prizes for her work on radioactivity .",
        "How many Nobel prizes did Marie Curie win ?",
        ["two"],
    ),
    ("The library opens at nine and closes at six every weekday .", "Who founded the library ?", []),
    (
        "Penguins live mostly in the southern hemisphere and cannot fly .",
        "Where do penguins mostly live ?",
        ["in the southern hemisphere"],
    ),
    (
        "The first telephone call was made by Alexander Graham Bell in 1876 .",
        "What color was the first telephone ?",
        [],
    ),
    (
        "Mount Everest is the highest mountain above sea level on Earth .",
        "What is the highest mountain on Earth ?",
        ["Mount Everest"],
    ),
    (
        "Coffee beans are roasted before they are ground and brewed .",
        "What happens to coffee beans before grinding ?",
        ["roasted"],
    ),
    ("The orchestra rehearsed the symphony for three weeks .", "Who composed the symphony ?", []),
    ("Honey bees communicate the location of flowers by dancing .", "How do honey bees communicate ?", ["by dancing"]),
]

_RECORD = [
    (
        "Alice Walker met Bob Stone in London . Later Alice Walker flew to Rome .",
        "@placeholder flew to Rome after the meeting .",
        "Alice Walker",
    ),
    ("The Red Sox beat the Yankees in Boston on Friday .", "The @placeholder lost the game on Friday .", "Yankees"),
    ("Google and Microsoft announced a deal in Seattle .", "The deal was announced in @placeholder .", "Seattle"),
    ("Nadal defeated Federer at Wimbledon after five sets .", "@placeholder won at Wimbledon .", "Nadal"),
    ("NASA launched a probe from Florida toward Mars .", "The probe is heading to @placeholder .", "Mars"),
    (
        "Emma Stone starred with Ryan Gosling in a film set in Los Angeles .",
        "@placeholder starred alongside Emma Stone .",
        "Ryan Gosling",
    ),
    ("The United Nations met in Geneva to discuss Syria .", "The meeting took place in @placeholder .", "Geneva"),
    ("Apple sued Samsung in California over phone patents .", "@placeholder was sued over patents .", "Samsung"),
    ("Chelsea signed a striker from Napoli for a record fee .", "The striker came from @placeholder .", "Napoli"),
    (
        "Merkel and Macron met in Brussels to talk about Europe .",
        "@placeholder hosted the leaders of Germany and France .",
        "Brussels",
    ),
]

#: A sentence whose names split into several sub-words of the tiny tokenizer.
SUBWORD_NER_CONTEXT = "Xylophonist Bartholomew Quackenbush visited Quackenbush Manor ."
SUBWORD_WORDS = ("Xylophonist", "Bartholomew", "Quackenbush")

_CAPITALISED = re.compile(r"[A-Z][\w]*(?: [A-Z][\w]*)*")


def sst2() -> list[AdapterExample]:
    return [
        AdapterExample(uid=f"sst-{i}", context=c, question=SST_QUESTION, answers=(a,)) for i, (c, a) in enumerate(_SST)
    ]


def mnli() -> list[AdapterExample]:
    return [
        AdapterExample(uid=f"mnli-{i}", context=p, hypothesis=h, question=MNLI_QUESTION, answers=(a,))
        for i, (p, h, a) in enumerate(_MNLI)
    ]


def ner() -> list[AdapterExample]:
    out = []
    for i, (ctx, per, org, loc) in enumerate(_NER_SENTENCES):
        for k, (q, ans) in enumerate(((PEOPLE_Q, per), (ORG_Q, org), (LOC_Q, loc)), start=1):
            out.append(AdapterExample(uid=f"{i}_{k}", context=ctx, question=q, answers=tuple(ans)))
    return out[:10]


def squad() -> list[AdapterExample]:
    out = []
    for i, (ctx, q, ans) in enumerate(_SQUAD):
        # Half of them carry answer_start offsets, as the CLUES rows do.
        starts = tuple(ctx.find(a) for a in ans) if i % 2 == 0 else ()
        out.append(AdapterExample(uid=f"sq-{i}", context=ctx, question=q, answers=tuple(ans), answer_starts=starts))
    return out


def record() -> list[AdapterExample]:
    out = []
    for i, (ctx, q, ans) in enumerate(_RECORD):
        cands = tuple((m.start(), m.end()) for m in _CAPITALISED.finditer(ctx) if m.group(0) not in ("The", "Later"))
        assert any(ctx[s:e] == ans for s, e in cands), (ans, [ctx[s:e] for s, e in cands])
        out.append(AdapterExample(uid=f"rc-{i}", context=ctx, question=q, answers=(ans,), candidates=cands))
    return out


def all_texts() -> list[str]:
    """Every text of every synthetic task (to train the tiny tokenizers on)."""
    texts = []
    for ex in sst2() + mnli() + ner() + squad() + record():
        texts += [ex.context, ex.question, ex.hypothesis, *ex.answers]
    for ctx, *_ in _NER_SENTENCES:
        texts.append(ctx)
    texts.append(SUBWORD_NER_CONTEXT)
    return [t for t in texts if t]


BY_KIND = {"label": sst2, "spans": ner, "span_or_none": squad, "entity": record}
TASK_OF_KIND = {"label": "sst2", "spans": "conll03", "span_or_none": "squad2", "entity": "record"}
