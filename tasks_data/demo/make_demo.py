#!/usr/bin/env python3
# ruff: noqa: E501  (the hand-written texts are long lines on purpose)
"""Generate the demo data set: invented texts laid out exactly like the CLUES release.

Every sentence, paragraph and article below was written for this project; none is taken
from CLUES or from the data sets CLUES samples. The files follow the official
CLUES-JSON layout and JSONL shapes (keys, key order, types, quirks such as the MNLI
question's "contraction" and the NER empty answer [""]), so the platform can be tried
without the official download.

Output: ``CLUES-JSON/<FOLDER>/<prefix>_test.jsonl`` and
``<prefix>_train_<K>_<SPLIT>.jsonl`` (K in 10, 20, 30; SPLIT in 1, 2) next to this script.

The tasks, their folders and file names are the task registry's (``tasks_data/registry.py``, plain Python).
Run ``python tasks_data/demo/make_demo.py`` (plain Python 3.10+, standard library only, no network, fixed seed);
it rewrites the files and then checks them (``verify``) and fails loudly if any rule is
broken. ``--check`` only checks the files already there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

SEED = 20240611
HERE = Path(__file__).resolve().parent
OUT = HERE / "CLUES-JSON"
SHOTS = (10, 20, 30)
SPLITS = (1, 2)

# How each task's training files nest, by registry slug (its folder and file names come from the task
# registry): "keep": 10_s < 20_s < 30_s; "permuted": like the official SQuAD-v2 / ReCoRD files, chain A is
# 10_1 < 20_2 < 30_1 and chain B is 10_2 < 20_1 < 30_2.
NESTING = {"squad2": "permuted", "record": "permuted"}  # every other task: "keep"
CHAIN_FILES = {
    "keep": ({10: 1, 20: 1, 30: 1}, {10: 2, 20: 2, 30: 2}),
    "permuted": ({10: 1, 20: 2, 30: 1}, {10: 2, 20: 1, 30: 2}),
}

SST_QUESTION = "positive or negative?"
MNLI_QUESTION = "entailment, contraction, or neutral?"  # sic, as in the official files
NER_QUESTIONS = {
    "PER": "List all the people names in the context",
    "ORG": "List all the organizations in the context",
    "LOC": "List all the locations in the context",
}
NER_SUFFIX = {"PER": "1", "ORG": "2", "LOC": "3"}
# Every official ReCoRD question wraps the cloze sentence like this (so @placeholder
# appears twice: once in the sentence, once in "What is @placeholder?"). Set to False
# to write the bare cloze sentence instead.
RECORD_OFFICIAL_WRAPPER = True


# ---------------------------------------------------------------------------------------
# SST-2: lowercase review fragments, tokenised like SST ("it 's", "does n't", " , ").
# "label | text"; the first 6 of each label are the test items.
# ---------------------------------------------------------------------------------------
SST = """
+ | a warm , funny and unexpectedly moving portrait of a family that refuses to fall apart .
+ | the performances are uniformly excellent
+ | it 's the kind of movie you want to see twice .
+ | delightfully odd
+ | the " little " movie of the summer turns out to be its best .
+ | a toe-tapping , heartfelt tribute to the r&b legends of the 1960s
+ | beautifully shot and confidently paced
+ | one of the most charming films of the year
+ | a smart , sly comedy that never talks down to its audience
+ | the director 's eye for detail makes every scene feel alive .
+ | a gripping thriller with real emotional weight
+ | the script crackles with wit
+ | tender and honest
+ | an impressive debut from a filmmaker with something to say
+ | the two leads share an easy , believable chemistry .
+ | a rare sequel that improves on the original
+ | lovingly crafted
+ | the soundtrack alone is worth the price of admission .
+ | a thoughtful , handsomely mounted drama
+ | keeps you guessing until the very last frame
+ | full of small , perfectly observed moments
+ | the cast clearly had a great time , and so did i .
+ | a joyous celebration of friendship
+ | surprisingly affecting
+ | a clever twist on a tired genre
+ | the animation is gorgeous and the jokes land for kids and adults alike .
+ | an exhilarating ride from start to finish
+ | rich in atmosphere
+ | her performance is quietly devastating in the best possible way .
+ | a film that earns every one of its tears
+ | sharp , funny and wise
+ | a triumph of craft and heart
+ | refreshingly free of cliches
+ | the kind of crowd-pleaser that does n't insult your intelligence
+ | moves with grace and purpose
+ | an absorbing character study
- | a tedious , overlong mess
- | the so-called " comedy " never earns a single laugh .
- | it 's hard to care about characters this thin .
- | painfully slow
- | the plot makes no sense , and the ending is worse .
- | the special effects ca n't hide the emptiness at its core .
- | the jokes fall flat one after another .
- | nothing here feels fresh
- | a lazy cash-in on a once-loved franchise
- | wastes a talented cast on a script that goes nowhere
- | dull and predictable
- | the dialogue sounds like it was written by a committee
- | a noisy , joyless action picture
- | by the halfway mark i was checking my watch .
- | clumsy editing
- | never rises above its tv-movie premise
- | the villain is more silly than scary .
- | a muddled thriller with no thrills
- | suffocatingly sentimental
- | an embarrassment for everyone involved
- | drags on for two long hours
- | the lead seems to be sleepwalking through his role .
- | a forgettable romance with zero sparks
- | cheap , ugly and mean-spirited
- | bloated and self-important
- | confuses loud with exciting
- | the story limps toward an ending you can see coming from the opening credits .
- | more tiresome than terrifying
- | an uneven , poorly acted mess
- | fails to make us care
- | a pale imitation of better films
- | the pacing is deadly .
- | a shrill , charmless comedy
- | it 's as if the filmmakers gave up halfway through .
- | stale jokes and flat performances
- | the kids in the audience were as bored as their parents
"""

# ---------------------------------------------------------------------------------------
# MNLI: (genre, premise, entailed, neutral, contradicting hypothesis). The first 4 premises
# (12 pairs) are the test items.
# ---------------------------------------------------------------------------------------
MNLI = [
    (
        "travel",
        "The old harbour is best explored on foot, and most of its caf\u00e9s stay open until well after midnight during the summer months.",
        "In summer, many caf\u00e9s in the old harbour are open late.",
        "The old harbour is the most visited part of the city.",
        "The caf\u00e9s in the old harbour close at sunset all year round.",
    ),
    (
        "government",
        "The committee will hold two public hearings on the proposal before voting on it in the fall.",
        "The public will have a chance to speak about the proposal before the vote.",
        "The proposal is likely to pass.",
        "The committee will vote on the proposal without holding any hearings.",
    ),
    (
        "fiction",
        "By the time Tom reached the station, the last train had already gone, so he spent the night on a bench in the waiting room.",
        "Tom missed the last train.",
        "Tom was cold during the night.",
        "Tom caught the last train home.",
    ),
    (
        "telephone",
        "well my husband does most of the cooking because he gets home earlier than i do",
        "The speaker's husband gets home before the speaker.",
        "The husband enjoys cooking.",
        "The speaker does all of the cooking.",
    ),
    # training premises
    (
        "travel",
        "Ferries to the island leave twice a day from the northern pier, though the afternoon crossing is often cancelled when the wind picks up.",
        "There is more than one ferry to the island each day.",
        "The morning ferry is usually crowded with tourists.",
        "The ferry to the island departs from the southern pier.",
    ),
    (
        "travel",
        "Admission to the museum is free on the first Sunday of every month, but visitors must still reserve a time slot online.",
        "On some days visitors do not have to pay to enter the museum.",
        "The museum is especially busy on free Sundays.",
        "On free days visitors can walk into the museum without any reservation.",
    ),
    (
        "travel",
        "The hiking trail climbs steeply for the first two miles before levelling out along a ridge with views of the valley.",
        "The first part of the trail is steep.",
        "The trail ends at a small lake.",
        "The trail is flat from beginning to end.",
    ),
    (
        "government",
        "Applicants must submit their forms by March 31, and late submissions will be considered only if the delay was caused by a documented emergency.",
        "There is a deadline for submitting the forms.",
        "Most applicants submit their forms in the last week before the deadline.",
        "Late submissions are never considered under any circumstances.",
    ),
    (
        "government",
        "The agency reduced its paper use by forty percent after it moved most of its internal reports to an electronic system.",
        "The agency now uses less paper than it did before.",
        "The electronic system was expensive to install.",
        "The agency's paper use increased after the switch to electronic reports.",
    ),
    (
        "government",
        "Grants under the program are limited to nonprofit organizations that serve rural communities with fewer than 10,000 residents.",
        "A for-profit company cannot receive a grant under the program.",
        "The program receives more applications than it can fund.",
        "Any city with more than a million residents qualifies for a grant.",
    ),
    (
        "government",
        "Inspectors found that three of the twelve bridges in the county needed urgent repairs, while the rest were in good condition.",
        "Most of the county's bridges were in good condition.",
        "The repairs will be finished by the end of the year.",
        "Every bridge in the county needed urgent repairs.",
    ),
    (
        "fiction",
        "Maria closed the letter without reading the last page and slipped it back into the drawer, as if it might burn her fingers.",
        "Maria did not finish reading the letter.",
        "The letter was from Maria's brother.",
        "Maria read the whole letter twice.",
    ),
    (
        "fiction",
        "The dog waited by the gate every evening at six, long after the old man had stopped coming home.",
        "The dog kept waiting at the gate.",
        "The old man had moved to another town.",
        "The dog never went near the gate.",
    ),
    (
        "fiction",
        '"We leave at dawn," said the captain, "and anyone who is not on board stays behind."',
        "The captain said they would leave early in the morning.",
        "Some of the crew were late.",
        "The captain promised to wait for everyone.",
    ),
    (
        "fiction",
        "Her grandmother's kitchen always smelled of cinnamon and burnt sugar, and nobody was ever allowed to touch the blue recipe book.",
        "There was a recipe book in the grandmother's kitchen.",
        "The grandmother was famous in town for her cakes.",
        "Everyone was free to use the blue recipe book.",
    ),
    (
        "slate",
        "The new phone is faster than last year's model, but its battery barely lasts a full day, which makes the upgrade hard to recommend.",
        "The writer has doubts about recommending the new phone.",
        "The new phone is more expensive than last year's model.",
        "The new phone's battery lasts for several days.",
    ),
    (
        "slate",
        "Critics loved the show's first season, yet its ratings were so low that the network almost cancelled it.",
        "The show nearly got cancelled.",
        "The second season was better than the first.",
        "The show's first season was a ratings hit.",
    ),
    (
        "slate",
        "It is tempting to blame the weather for the poor harvest, but farmers in the region point to rising fuel costs instead.",
        "Farmers give a reason other than the weather for the poor harvest.",
        "The harvest will recover next year.",
        "Farmers in the region say the weather alone caused the poor harvest.",
    ),
    (
        "slate",
        "The author's second novel is shorter and angrier than her first, and it has already sold twice as many copies.",
        "The second novel has sold more copies than the first.",
        "The author is working on a third novel.",
        "The second novel is longer than the first.",
    ),
    (
        "slate",
        "Few people noticed when the company quietly changed its privacy policy, even though the change allows it to share customer data with advertisers.",
        "The company's new policy lets it share customer data with advertisers.",
        "The company earns most of its money from advertising.",
        "The company announced the change with a big public campaign.",
    ),
    (
        "telephone",
        "yeah we tried camping once with the kids and it rained the whole weekend so now we just rent a cabin",
        "They now rent a cabin instead of camping.",
        "The cabin is near a lake.",
        "They go camping with the kids every summer.",
    ),
    (
        "telephone",
        "i don't really watch much tv anymore um mostly just the news in the morning while i'm getting ready for work",
        "The speaker watches the news in the morning.",
        "The speaker prefers reading to watching tv.",
        "The speaker watches tv all evening.",
    ),
    (
        "telephone",
        "we've had our car for about twelve years now and it still runs fine so i don't see any reason to buy a new one",
        "The speaker's car is more than ten years old.",
        "The car has been repaired many times.",
        "The speaker is planning to buy a new car soon.",
    ),
    (
        "telephone",
        "uh-huh yeah i vote in every election even the small local ones because that's where your vote really counts",
        "The speaker votes in local elections.",
        "The speaker has worked at a polling station.",
        "The speaker only votes in national elections.",
    ),
]

# ---------------------------------------------------------------------------------------
# NER. One sentence a line, tokenised with spaces; entities marked [[TYPE:text]]
# (PER people, ORG organizations, LOC locations; nationalities and events stay unmarked).
# The first 4 lines are the test sentences.
# ---------------------------------------------------------------------------------------
CONLL = """
[[PER:José Álvarez]] , who joined [[ORG:AT&T]] in 1998 , will move to [[LOC:Madrid]] and [[LOC:Lisbon]] next year .
Police in [[LOC:Lyon]] said the fire started in a [[ORG:Vireo Logistics]] warehouse on the edge of [[LOC:Lyon]] late on Monday .
Shares closed 2 percent lower in thin trading on Friday .
[[PER:Anna Kowalski]] and [[PER:Peter O'Neill]] reached the final in [[LOC:Rotterdam]] on Saturday .
SOCCER - [[ORG:DYNAMO]] BEAT [[ORG:SPARTAK]] 3-1 .
[[LOC:OSLO]] 1997-03-14
The central bank left its main interest rate unchanged at 4.5 percent .
[[PER:Helena Marsh]] , chief executive of [[ORG:Castellan Bank]] , said profits would rise this year .
Rain delayed the start of play in [[LOC:Leeds]] by two hours .
[[PER:Tomas Berg]] scored in the 89th minute to give [[ORG:Vastra FC]] a 2-1 win over [[ORG:Eagles United]] .
Wheat prices fell sharply in [[LOC:Chicago]] after forecasts of a record harvest in [[LOC:Kansas]] .
[[ORG:United Nations]] officials arrived in [[LOC:Nairobi]] on Wednesday for talks on food aid .
" We are very happy with the result , " [[PER:Kessler]] told reporters .
[[ORG:Norvik Steel]] shares rose 5 percent in early trading .
[[PER:Lucia Ferrante]] ( [[LOC:Italy]] ) beat [[PER:Mei Tanaka]] ( [[LOC:Japan]] ) 6-3 6-4
The talks ended without agreement , a government spokesman said .
Prime Minister [[PER:Olav Strand]] will visit [[LOC:Warsaw]] next month .
[[ORG:Meridian Airlines]] said it would add daily flights between [[LOC:Dublin]] and [[LOC:Boston]] .
Police said two men were arrested after the robbery .
[[PER:Amir Haddad]] , 34 , was named coach of [[ORG:Al Noor]] on Monday .
The company expects sales to grow by about 8 percent next year .
[[ORG:Kestrel Motors]] recalled 12,000 cars in [[LOC:Canada]] because of a faulty brake part .
[[PER:Sarah Whitfield]] won the women 's 400 metres in 50.21 seconds .
RUGBY UNION - [[ORG:GREYHOUNDS RFC]] SIGN [[PER:MCKENZIE]] .
[[PER:Jean-Luc Moreau]] of [[ORG:Banque Sorel]] said the franc was likely to stay firm .
Floods forced thousands of people from their homes in southern [[LOC:Bangladesh]] .
[[ORG:Greenfield Foods]] will close its plant in [[LOC:Leicester]] , cutting 250 jobs .
The index closed up 12.4 points at 2,315.7 .
[[PER:Viktor Hale]] denied the charges in court on Tuesday .
[[ORG:Tarrant Energy]] agreed to buy [[ORG:Bluewater Gas]] for $ 1.2 billion .
[[LOC:Kiev]] 's mayor , [[PER:Pavlo Hrytsenko]] , opened the new bridge .
[[PER:Nadia Petrova]] and [[PER:Elif Kaya]] both advanced to the semi-finals .
Temperatures are expected to drop below freezing overnight .
[[ORG:Orion Telecom]] and [[ORG:Nordlink Mobile]] signed a roaming deal covering [[LOC:Estonia]] and [[LOC:Latvia]] .
[[PER:Gareth Owen]] 's late goal earned [[ORG:Albion Wanderers]] a draw .
Opposition leader [[PER:Ruth Adeyemi]] called for an early election .
Fog closed the airport in [[LOC:Frankfurt]] for three hours on Friday .
[[ORG:Sunridge Mining]] reported a first-half loss .
[[PER:Igor Sokolov]] ( [[LOC:Russia]] ) 2:08:41
[[PER:Chen Wei]] , a spokesman for [[ORG:Bluefin Shipping]] , said the ship had left [[LOC:Singapore]] on time .
The strike is expected to last at least a week .
[[ORG:Northgate University]] researchers said the vaccine worked well in early tests .
[[PER:Isabel Cruz]] will replace [[PER:Martin Hagen]] as finance minister .
Ships were stuck outside [[LOC:Rotterdam]] and [[LOC:Antwerp]] because of high winds .
[[ORG:Aurora Insurance]] said storm claims had reached $ 40 million .
[[PER:Yusuf Demir]] signed a two-year contract with [[ORG:Yildiz SK]] .
Fans waited outside the stadium for hours .
[[ORG:Helix Pharma]] won approval to sell its new drug in [[LOC:Europe]] .
[[PER:Rosa Lindqvist]] led from start to finish to win the stage in [[LOC:Grenoble]] .
Traders said the dollar was supported by strong jobs data .
[[PER:Kwame Mensah]] told a meeting in [[LOC:Accra]] that cocoa exports would rise .
[[ORG:Silverline Rail]] cancelled all trains between [[LOC:Glasgow]] and [[LOC:Edinburgh]] .
[[PER:Dmitri Volkov]] resigned after three years in the job .
Voting ends at 8 p.m. local time .
[[PER:Hannah Schulz]] , [[PER:Jonas Weber]] and [[PER:Lea Braun]] were named in the squad .
[[ORG:Crescent Bank]] opened ten new branches in [[LOC:Morocco]] .
[[LOC:ATHENS]] 1997-05-02
[[ORG:Westbrook Capital]] said it had sold its stake in [[ORG:Lumen Media]] .
[[PER:Michael O'Connor]] , a priest in [[LOC:Cork]] , led the march .
The court will announce its ruling next week .
[[ORG:Mercy General Hospital]] said [[PER:Laura Bennett]] was in stable condition .
Traffic in [[LOC:Paris]] was heavy as workers left [[LOC:Paris]] for the holiday weekend .
[[PER:Tariq Aziz Khan]] , who took three wickets for [[ORG:Northern Strikers]] , was named man of the match .
Heavy snow closed several roads north of [[LOC:Innsbruck]] on Thursday .
"""

WIKIANN = """
[[PER:Émile Durand]] ( born 1952 ) , French painter
[[ORG:Riverside Academy]] , a school in [[LOC:Kent]] , [[LOC:England]]
'' The Silent Orchard '' ( 1987 film )
[[PER:Karl Weiss]] moved to [[LOC:Vienna]] in 1911 and died in [[LOC:Vienna]] in 1938 .
[[ORG:Bellmont Rangers F.C.]]
[[LOC:Lake Orrin]]
[[PER:Margaret Ellery]] ( 1901–1978 )
Communes of the [[LOC:Haute-Loire]] department
[[ORG:National Film Archive]]
'' Night Train to Nowhere '' ( 1994 )
[[LOC:Kraków]]
[[PER:Edward Lyle]] ( cricketer )
He played for [[ORG:Dunmore Athletic]] and [[ORG:Carrick United]] .
[[LOC:Rio Verde]] , [[LOC:Goiás]]
Members of the [[ORG:Liberal Democratic Union]]
[[PER:Anja Lindholm]] , Swedish singer
Populated places in [[LOC:Marlow County]] , [[LOC:Oregon]]
[[ORG:Halden Records]] albums
The river flows through [[LOC:Hungary]] and [[LOC:Serbia]] before joining the [[LOC:Danube]] .
[[PER:Ravi Menon]] ( politician )
'' [[ORG:The Daily Courier]] ''
[[LOC:Mount Keller]]
[[ORG:Ashgrove University]] alumni
1998 in [[LOC:Portugal]]
[[PER:Georg Brandt]] and [[PER:Lotte Brandt]]
[[PER:Charles Whitby]] ( born 1966 ) is an English actor .
[[ORG:Royal Navy]] submarines
[[LOC:Kingston upon Hull]]
Music of [[LOC:Chile]]
[[ORG:Atlas Film Studios]]
People from [[LOC:Lagos]]
[[PER:Oliver Grant]] ( footballer , born 1990 )
She was educated at [[ORG:Somerville College]] and later taught in [[LOC:Edinburgh]] .
'' Summer of the Red Kite '' ( novel )
[[LOC:Puerto Esperanza]]
[[PER:Yuki Moriyama]]
[[ORG:Black Knight Chess Club]]
[[LOC:Kettle Valley]] , [[LOC:British Columbia]]
[[PER:Isaac Penrose]] , father of [[PER:Ada Penrose]]
[[ORG:SV Blau-Weiss]] players
Islands of [[LOC:Greece]]
Tributaries of the [[LOC:Ohio River]]
[[PER:Beatriz Salgado]] , Brazilian swimmer
[[ORG:Western Union]]
Villages in [[LOC:Kerala]]
[[ORG:Northern Ballet Company]] productions
[[PER:Jan Kowal]] ( 1880–1941 ) , Polish composer
[[ORG:Kessler Aviation]] aircraft
The album was recorded in [[LOC:Nashville]] and released by [[ORG:Bluebird Records]] .
[[LOC:Valle de Oro]]
[[PER:Ingrid Solberg]] ( skier )
'' Tales from the Harbour '' ( TV series )
[[ORG:Order of the Silver Oak]]
Mayors of [[LOC:Ljubljana]]
[[PER:Tobias Fenwick]] , [[PER:Ruth Fenwick]] and [[PER:Alan Fenwick]]
[[ORG:Harlan & Wolcott]]
Former members of [[ORG:The Lanterns]]
[[PER:Farid Nasser]] ( born 1975 ) , Lebanese journalist
Rivers of [[LOC:Peru]]
1924 births
[[PER:Leon Marchetti]] moved to [[LOC:Turin]] , where he founded [[ORG:Officine Marchetti]] .
[[LOC:Oslo]] , [[LOC:Bergen]] and [[LOC:Trondheim]]
[[ORG:Merchant Savings Bank]]
[[PER:Tomás O'Hare]] ( hurler )
"""

# ---------------------------------------------------------------------------------------
# SQuAD v2: paragraphs with questions. An answer is a list of alternative spans (text, or
# (text, occurrence) when not the first occurrence); None = unanswerable, with a plausible
# (wrong) span. The first 3 paragraphs are the test items.
# ---------------------------------------------------------------------------------------
SQUAD = [
    (
        "In HTML, the tag <b> marks text that should be drawn in bold. It is one of the oldest tags "
        "in the language and was already supported by browsers in the early 1990s. Later versions of "
        "HTML introduced a tag called strong, which describes importance rather than appearance. Most "
        "browsers still draw both tags in the same way, so readers rarely see a difference. Cascading "
        "Style Sheets, first published in 1996, gave authors a separate way to control how text looks.",
        [
            ("Which tag makes text bold in HTML?", ["<b>", "<b>", "the tag <b>"], None),
            ("In what year were Cascading Style Sheets first published?", ["1996", "1996"], None),
            ("In what year was the tag strong removed from HTML?", None, "1996"),
            ("Who invented the tag <b>?", None, "browsers"),
        ],
    ),
    (
        "An inequality compares two quantities that may not be equal. The statement x < y means that "
        'x is smaller than y, and it is read aloud as "x is less than y". The sign for equality had '
        "been introduced some decades earlier by another writer. The symbols for less than and greater "
        "than first appeared in print in a book by the English mathematician Thomas Harriot, which was "
        "published in 1631, ten years after his death.",
        [
            ("What does the statement x < y mean?", ["x is smaller than y", "that x is smaller than y"], None),
            ("In which year was Harriot's book published?", ["1631", "1631", "1631"], None),
            ("Who introduced the sign for equality?", None, "Thomas Harriot"),
            ("How many years after Harriot's birth was his book published?", None, "ten years"),
        ],
    ),
    (
        "Brackenford is a market town on the River Lode, about twenty miles north of the coast. It "
        "grew rich in the 1700s from the wool trade, and many of its stone houses date from that "
        "period. The town's weekly market has been held every Thursday since 1682. A railway station "
        "opened in 1859 but closed a century later, and today the nearest station is in the village "
        "of Ashby Cross. Brackenford's best-known landmark is St Bride's Church, whose spire can be "
        "seen from across the valley.",
        [
            ("On which river does Brackenford stand?", ["River Lode", "the River Lode"], None),
            ("On what day of the week is Brackenford's market held?", ["Thursday", "every Thursday", "Thursday"], None),
            ("When did the railway station in Ashby Cross open?", None, "1859"),
            ("What was Brackenford's main trade in the 1600s?", None, "the wool trade"),
        ],
    ),
    # training paragraphs
    (
        "Honey bees live in colonies that can contain more than fifty thousand workers during the "
        "summer. Each colony has a single queen, whose main task is to lay eggs. Worker bees are "
        "female and do almost all of the work, from cleaning cells to collecting nectar. Male bees, "
        "called drones, do not gather food; their only role is to mate with a queen from another "
        "colony. In autumn the workers often push the drones out of the hive, because the colony "
        "cannot afford to feed them through the winter.",
        [
            ("How many queens does a honey bee colony have?", ["a single queen"], None),
            ("What are male honey bees called?", ["drones"], None),
            (
                "Why do workers push the drones out of the hive in autumn?",
                ["the colony cannot afford to feed them through the winter"],
                None,
            ),
            ("How many drones does a colony contain in summer?", None, "more than fifty thousand"),
        ],
    ),
    (
        "The Greyhaven Lighthouse stands on a rocky point at the mouth of the bay. It was completed in "
        "1874 after two ships were wrecked on the nearby reef in a single winter. The tower is 38 "
        "metres tall and was originally lit by an oil lamp, which was replaced by an electric light in "
        "1931. The last keeper left in 1989, when the light became fully automatic. The keeper's "
        "cottage is now a small museum that is open from April to October.",
        [
            ("When was the Greyhaven Lighthouse completed?", ["1874"], None),
            ("How tall is the tower of the lighthouse?", ["38 metres"], None),
            ("When did the light become fully automatic?", ["1989"], None),
            ("When was the keeper's cottage built?", None, "1874"),
        ],
    ),
    (
        "Yeast is a single-celled fungus that bakers have used for thousands of years. When it is "
        "mixed into dough, it feeds on sugars and releases carbon dioxide gas. The gas is trapped by a "
        "network of proteins called gluten, which makes the dough rise. Salt slows the yeast down, so "
        "bakers add it carefully to control how quickly the dough grows. Most of the alcohol that "
        "yeast also produces evaporates in the heat of the oven.",
        [
            ("What gas does yeast release?", ["carbon dioxide"], None),
            ("What is the network of proteins that traps the gas called?", ["gluten"], None),
            ("What effect does salt have on yeast?", ["slows the yeast down"], None),
            ("At what temperature does yeast die?", None, "the heat of the oven"),
        ],
    ),
    (
        "Calloway & Sons was founded in 1921 as a small shop selling bicycle parts in the town of "
        "Harwick. In 1938 the company built its first motorcycle, the Model A, which had a top speed "
        "of 70 miles per hour. During the war the factory produced engines for army trucks. The "
        "company was bought by a larger rival in 1972, but the Calloway name was kept for its touring "
        "motorcycles until 2004.",
        [
            ("What did Calloway & Sons sell when it was founded?", ["bicycle parts"], None),
            ("What was the company's first motorcycle called?", ["the Model A"], None),
            ("In what year was Calloway & Sons bought by a rival?", ["1972"], None),
            ("What was the top speed of the Model B?", None, "70 miles per hour"),
        ],
    ),
    (
        "A monsoon is a seasonal change in the direction of the strongest winds in a region. In South "
        "Asia, the summer monsoon usually arrives in early June, when moist air from the Indian Ocean "
        "moves over the land. Most of the region's yearly rainfall comes during the four months that "
        "follow. Farmers depend on these rains to grow rice, and a late or weak monsoon can lead to "
        "poor harvests. The winter monsoon brings dry winds from the north-east.",
        [
            ("When does the summer monsoon usually arrive in South Asia?", ["early June"], None),
            ("Where does the moist air of the summer monsoon come from?", ["the Indian Ocean"], None),
            ("What crop do farmers grow with the monsoon rains?", ["rice"], None),
            ("When does the winter monsoon usually end?", None, "early June"),
        ],
    ),
    (
        "The Holloway Library was opened in 1905 with money left by a local shipowner, Edith "
        "Holloway. Its reading room, lit by a glass dome, could seat two hundred readers. For most of "
        "its history the library lent books free of charge, but it began charging a small fee for "
        "music recordings in 1962. The building was damaged by fire in 1977 and reopened three years "
        "later after a careful restoration.",
        [
            ("Whose money paid for the Holloway Library?", ["Edith Holloway"], None),
            ("How many readers could the reading room seat?", ["two hundred"], None),
            ("What lit the reading room?", ["a glass dome"], None),
            ("When did the library stop charging for music recordings?", None, "1962"),
        ],
    ),
    (
        "A chess clock is made of two connected clocks with buttons that stop one clock while "
        "starting the other. After making a move, a player presses the button, which stops their own "
        "clock and starts the opponent's. If a player's time runs out, they lose the game, unless the "
        "opponent has too few pieces left to ever give checkmate. Mechanical chess clocks were used in "
        "tournaments from the 1880s, and digital clocks became common in the 1990s.",
        [
            ("What happens when a player's time runs out?", ["they lose the game"], None),
            ("When did digital chess clocks become common?", ["the 1990s"], None),
            ("What does a player do after making a move?", ["presses the button"], None),
            ("In what decade was the mechanical chess clock invented?", None, "the 1880s"),
        ],
    ),
    (
        "The Serra Pass crosses the mountains at a height of 2,140 metres and links the valleys of "
        "Orvada and Caltis. For centuries it was used by traders carrying salt and wool, who travelled "
        "in groups to protect themselves from bandits. A paved road was built over the pass in 1936, "
        "and a tunnel beneath it opened in 1981. Today the old road is closed to cars from November to "
        "May because of snow.",
        [
            ("How high is the Serra Pass?", ["2,140 metres"], None),
            ("What goods did traders carry over the pass?", ["salt and wool"], None),
            ("When is the old road closed to cars?", ["from November to May"], None),
            ("How long is the tunnel beneath the pass?", None, "2,140 metres"),
        ],
    ),
    (
        "Emperor penguins are the largest of all penguins, standing over a metre tall. They breed "
        "during the Antarctic winter, when temperatures can fall below minus 40 degrees Celsius. After "
        "laying a single egg, the female returns to the sea to feed, and the male keeps the egg warm "
        "on his feet for about two months. During this time he eats nothing and may lose nearly half "
        "of his body weight.",
        [
            ("Which parent keeps the egg warm?", ["the male"], None),
            ("For how long does the male keep the egg warm?", ["about two months"], None),
            ("During which season do emperor penguins breed?", ["the Antarctic winter"], None),
            ("How much weight does the female lose during the winter?", None, "nearly half of his body weight"),
        ],
    ),
    (
        "The Harrow Falls Gazette was first printed on 3 May 1851 and sold for one cent. Its founder, "
        "a former schoolteacher named Amos Pike, wrote most of the articles himself during the first "
        "year. By 1880 the paper had a daily circulation of 12,000 copies. It merged with its rival, "
        "the Evening Star, in 1923, and the combined paper is still published under the name "
        "Gazette-Star.",
        [
            ("Who founded the Harrow Falls Gazette?", ["Amos Pike"], None),
            ("Under what name is the combined paper published?", ["Gazette-Star"], None),
            ("When did Amos Pike stop teaching?", None, "3 May 1851"),
            ("What was the daily circulation of the Evening Star in 1880?", None, "12,000 copies"),
        ],
    ),
    (
        "A glacier forms where more snow falls each winter than melts each summer. Over many years the "
        "snow is pressed into dense ice, which begins to flow slowly downhill under its own weight. "
        "Some glaciers move less than a metre a day, while others can travel more than thirty metres a "
        "day. As they move, glaciers carve deep U-shaped valleys and carry rocks for long distances.",
        [
            ("What shape of valley do glaciers carve?", ["U-shaped"], None),
            ("What makes glacier ice flow downhill?", ["its own weight"], None),
            ("What is the snow pressed into?", ["dense ice"], None),
            ("How old is the oldest glacier?", None, "many years"),
        ],
    ),
    (
        "The Lantern Festival of Saint-R\u00e9my takes place every year on the last Saturday of "
        "September. It began in 1954, when local fishermen carried lanterns through the streets to "
        "thank the town for its help after a storm. Today more than 3,000 people take part, and the "
        "parade ends at the harbour, where the lanterns are set afloat on the water. The festival's "
        "organiser, H\u00e9l\u00e8ne Martel, has run the event since 2008.",
        [
            ("On what day is the Lantern Festival held?", ["the last Saturday of September"], None),
            ("Where does the parade end?", ["at the harbour"], None),
            ("Who organises the festival?", ["H\u00e9l\u00e8ne Martel"], None),
            ("Who organised the festival before 2008?", None, "H\u00e9l\u00e8ne Martel"),
        ],
    ),
    (
        "The safety bicycle, with two wheels of equal size and a chain driving the rear wheel, "
        "appeared in England in the 1880s. It replaced the high-wheeler, whose huge front wheel made "
        "riders sit so high that falls were common and dangerous. Air-filled tyres, added a few years "
        "later, made the ride far more comfortable. Within a decade cycling had become a popular "
        "pastime, and it gave many women a new kind of independence.",
        [
            ("What drives the rear wheel of a safety bicycle?", ["a chain"], None),
            ("What kind of bicycle did the safety bicycle replace?", ["the high-wheeler"], None),
            ("What made the ride more comfortable?", ["Air-filled tyres"], None),
            ("In what country was the high-wheeler first made?", None, "England"),
        ],
    ),
    (
        "Coral reefs are built by tiny animals called polyps, which produce hard skeletons of calcium "
        "carbonate. Many corals get most of their food from algae that live inside their tissues and "
        "make sugars from sunlight. When the water becomes too warm, the corals expel the algae and "
        "turn white, a process known as bleaching. Reefs cover less than one percent of the ocean "
        "floor but support about a quarter of all marine species.",
        [
            ("What animals build coral reefs?", ["polyps"], None),
            ("What is it called when corals turn white?", ["bleaching"], None),
            ("What share of marine species do reefs support?", ["about a quarter"], None),
            ("What share of the ocean floor did reefs cover a century ago?", None, "less than one percent"),
        ],
    ),
    (
        "Nora Lindqvist was a Swedish pianist who toured Europe in the 1920s. She studied in Stockholm "
        "and later in Vienna, where she became known for her performances of Schubert. In 1931 she "
        "founded a music school for children in Gothenburg, which she directed for thirty years. Her "
        "recordings are rare, because she disliked the studio and preferred to play for a live "
        "audience.",
        [
            ("In which city did Nora Lindqvist found a music school?", ["Gothenburg"], None),
            ("Whose music was she known for performing?", ["Schubert"], None),
            ("Why are her recordings rare?", ["she disliked the studio"], None),
            ("When did Nora Lindqvist first record in a studio?", None, "1931"),
        ],
    ),
]

# ---------------------------------------------------------------------------------------
# ReCoRD: (passage, highlights, entity strings, [(cloze sentence, answer entity), ...]).
# Every mention of a listed entity string becomes a candidate. The first 4 passages
# (12 queries) are the test items.
# ---------------------------------------------------------------------------------------
RECORD = [
    (
        "(CNN) -- A fisherman from Galway rescued two teenagers whose kayak capsized off the west coast "
        "of Ireland on Sunday, the Irish Coast Guard said. Declan Walsh, 58, spotted the pair clinging "
        "to their upturned boat about a mile from shore and pulled them aboard his trawler. Both "
        'teenagers were taken to University Hospital Galway and were later released. "I just did what '
        'anyone would do," he told local radio station Galway Bay FM.',
        [
            "Declan Walsh pulled two teenagers from the water off Galway",
            "The Irish Coast Guard praised the fisherman's quick thinking",
        ],
        [
            "CNN",
            "Galway",
            "Ireland",
            "Irish Coast Guard",
            "Declan Walsh",
            "University Hospital Galway",
            "Galway Bay FM",
        ],
        [
            (
                "Speaking after the rescue, @placeholder said he had fished those waters for forty years.",
                "Declan Walsh",
            ),
            (
                "The two teenagers were treated for mild hypothermia at @placeholder before going home.",
                "University Hospital Galway",
            ),
            (
                "Officials at the @placeholder urged kayakers to wear life jackets and to carry a radio.",
                "Irish Coast Guard",
            ),
        ],
    ),
    (
        "By Staff Reporter . A Spanish chef has opened a restaurant in London that serves only dishes "
        "made from leftover bread. In\u00e9s Ortega, who trained in Barcelona, said the idea came from "
        "her grandmother, who never threw anything away. The restaurant, called Miga, seats just 24 "
        "people and is already fully booked for the next two months. Critics from The Evening Herald "
        'described the menu as "surprisingly inventive".',
        [
            "In\u00e9s Ortega's restaurant Miga uses only leftover bread",
            "The chef trained in Barcelona before moving to London",
        ],
        ["Spanish", "London", "In\u00e9s Ortega", "Barcelona", "Miga", "The Evening Herald"],
        [
            ("Before opening @placeholder, the chef worked in several hotel kitchens.", "Miga"),
            (
                "@placeholder says she learned to cook by watching her grandmother bake every Sunday.",
                "In\u00e9s Ortega",
            ),
            ("Diners hoping to eat at the new restaurant in @placeholder must book weeks in advance.", "London"),
        ],
    ),
    (
        "(CNN) -- Kenyan runner Grace Wanjiru won the Rotterdam Marathon on Sunday, breaking the course "
        "record by almost a minute. The 27-year-old pulled away from Ethiopia's Almaz Tesfaye in the "
        "final five kilometres and crossed the line alone. Her coach, Peter Otieno, said she had "
        "trained at altitude in Iten for three months before the race. It was her first marathon "
        "victory outside Africa.",
        ["Grace Wanjiru breaks the course record in Rotterdam", "Almaz Tesfaye of Ethiopia finishes second"],
        [
            "CNN",
            "Kenyan",
            "Grace Wanjiru",
            "Rotterdam Marathon",
            "Rotterdam",
            "Ethiopia",
            "Almaz Tesfaye",
            "Peter Otieno",
            "Iten",
            "Africa",
        ],
        [
            ("@placeholder, who finished second, said she would race again in Berlin in the autumn.", "Almaz Tesfaye"),
            ("Before the race, @placeholder had never won a marathon outside her home continent.", "Grace Wanjiru"),
            (
                "@placeholder, who has coached her since she was a teenager, called the result 'a dream come true'.",
                "Peter Otieno",
            ),
        ],
    ),
    (
        "(CNN) -- A rare copy of a 17th-century atlas has been found in the attic of a farmhouse in "
        "Yorkshire, England. The book, printed in Amsterdam in 1662, was discovered by retired teacher "
        "Margaret Hale while she was clearing out her late uncle's belongings. Experts at the auction "
        "house Fenwick & Lowe say it could sell for more than \u00a3200,000 when it goes under the "
        "hammer in London next month.",
        [
            "Margaret Hale found the atlas while clearing her uncle's attic",
            "Fenwick & Lowe will sell the book in London next month",
        ],
        ["CNN", "Yorkshire", "England", "Amsterdam", "Margaret Hale", "Fenwick & Lowe", "London"],
        [
            ("The atlas was printed in @placeholder, then the busiest centre of map-making in Europe.", "Amsterdam"),
            (
                "@placeholder said she almost threw the book away because its cover was so badly damaged.",
                "Margaret Hale",
            ),
            ("A spokesman for @placeholder said interest from collectors had been 'extraordinary'.", "Fenwick & Lowe"),
        ],
    ),
    # training passages
    (
        "(CNN) -- Firefighters brought a large bush fire under control near the town of Kellan Creek in "
        "Victoria, Australia, on Tuesday after three days of strong winds. The Country Fire Authority "
        "said no homes had been lost, although several farm sheds were destroyed. Local mayor Helen "
        "Crossley thanked the volunteers who had travelled from as far away as Melbourne to help.",
        ["The fire near Kellan Creek burned for three days", "Volunteers came from Melbourne to help fight the blaze"],
        ["CNN", "Kellan Creek", "Victoria", "Australia", "Country Fire Authority", "Helen Crossley", "Melbourne"],
        [
            ("Residents of @placeholder were allowed to return to their homes on Wednesday morning.", "Kellan Creek"),
            ("@placeholder said the town would hold a barbecue to thank the firefighters.", "Helen Crossley"),
            (
                "A spokesman for the @placeholder warned that the fire season was far from over.",
                "Country Fire Authority",
            ),
        ],
    ),
    (
        "By Staff Reporter . A tortoise that went missing from a zoo in Devon has been found almost two "
        "miles away, eating lettuce in a neighbour's garden. Keepers at Coombe Valley Zoo said Hector, "
        "a 60-year-old African spurred tortoise, had escaped through a gap in a fence. He was spotted "
        "by eight-year-old Lily Pearce, who recognised him from posters put up around the village of "
        "Westleigh.",
        ["Hector the tortoise escaped from Coombe Valley Zoo", "He was found by Lily Pearce two miles away"],
        ["Devon", "Coombe Valley Zoo", "Hector", "African", "Lily Pearce", "Westleigh"],
        [
            ("Keepers have promised that @placeholder will get a new, stronger enclosure.", "Hector"),
            ("@placeholder was given a free family pass to the zoo as a reward.", "Lily Pearce"),
            ("Staff at @placeholder counted every animal again after the escape.", "Coombe Valley Zoo"),
        ],
    ),
    (
        "(CNN) -- Engineers at the Nordic Space Agency have lost contact with a weather satellite "
        "launched only six weeks ago. The satellite, known as Aurora-3, stopped sending signals on "
        "Friday while passing over Greenland. Project director Lars Eriksen said the team was trying "
        "to restart its radio from a ground station in Troms\u00f8, Norway. The satellite cost about "
        "90 million euros to build.",
        ["Aurora-3 went silent over Greenland on Friday", "Engineers are trying to reach it from Troms\u00f8"],
        ["CNN", "Nordic Space Agency", "Aurora-3", "Greenland", "Lars Eriksen", "Troms\u00f8", "Norway"],
        [
            (
                "If contact cannot be restored, @placeholder will be the agency's first lost mission in twenty years.",
                "Aurora-3",
            ),
            ("@placeholder said he remained 'cautiously hopeful' that the satellite could be saved.", "Lars Eriksen"),
            (
                "Staff at the ground station near @placeholder, a city north of the Arctic Circle, worked through the night.",
                "Troms\u00f8",
            ),
        ],
    ),
    (
        "(CNN) -- The Portuguese town of Vila Nova de Areia has unveiled plans to turn a disused railway "
        "line into a seven-kilometre park for walkers and cyclists. Mayor Rui Carvalho said work would "
        "begin next spring and should take about two years. The design, by the Lisbon firm Atelier "
        "Verde, includes gardens, a small open-air theatre and a caf\u00e9 built inside an old signal box.",
        [
            "An old railway line in Vila Nova de Areia will become a park",
            "The park was designed by the Lisbon firm Atelier Verde",
        ],
        ["CNN", "Portuguese", "Vila Nova de Areia", "Rui Carvalho", "Lisbon", "Atelier Verde"],
        [
            ("@placeholder said the park would 'give the railway back to the people'.", "Rui Carvalho"),
            (
                "Architects from @placeholder visited similar projects in Paris and New York before drawing up the plans.",
                "Atelier Verde",
            ),
            ("Trains last ran on the line through @placeholder in 1989.", "Vila Nova de Areia"),
        ],
    ),
    (
        "By Staff Reporter . A violin made in 1714 by the Italian craftsman Antonio Stradivari sold at "
        'auction in New York on Thursday for $9.2 million. The instrument, known as the "Silver '
        'Swan", was bought by an anonymous collector after ten minutes of bidding. For more than fifty '
        "years it had belonged to the Hartmann Foundation, a Swiss charity that lends instruments to "
        "young musicians.",
        ['The "Silver Swan" was made by Antonio Stradivari in 1714', "It was sold by the Hartmann Foundation"],
        ["Italian", "Antonio Stradivari", "New York", "Silver Swan", "Hartmann Foundation", "Swiss"],
        [
            (
                "The @placeholder said money from the sale would buy new instruments for the young players it supports.",
                "Hartmann Foundation",
            ),
            (
                "Experts say @placeholder made only a handful of violins in the year he built this one.",
                "Antonio Stradivari",
            ),
            ("It is not known whether the @placeholder will ever be played in public again.", "Silver Swan"),
        ],
    ),
    (
        "(CNN) -- A Canadian teenager has become the youngest person to sail alone across the Atlantic "
        "Ocean in a boat she built herself. Emily Tremblay, 17, left Halifax, Nova Scotia, in June and "
        "reached Falmouth in south-west England 41 days later. Her father, Marc Tremblay, followed her "
        "progress from home using a satellite tracker.",
        ["Emily Tremblay sailed from Halifax to Falmouth in 41 days", "She built the boat herself"],
        [
            "CNN",
            "Canadian",
            "Atlantic Ocean",
            "Emily Tremblay",
            "Halifax",
            "Nova Scotia",
            "Falmouth",
            "England",
            "Marc Tremblay",
        ],
        [
            ("@placeholder said the hardest part of the voyage was a storm that lasted three days.", "Emily Tremblay"),
            ("Crowds gathered in the harbour at @placeholder to welcome her ashore.", "Falmouth"),
            (
                "@placeholder admitted he had barely slept during the six weeks his daughter was at sea.",
                "Marc Tremblay",
            ),
        ],
    ),
    (
        "(CNN) -- Scientists in Chile have discovered a new species of frog living in a single patch of "
        "cloud forest in the Andes. The tiny green frog, less than two centimetres long, has been "
        "nicknamed the moon frog because it is active only on moonlit nights. The team, led by Dr. "
        "Camila Rojas of the University of Santiago, said the species was probably endangered because "
        "its habitat is so small.",
        [
            "The frog lives in a single patch of cloud forest in Chile",
            "Researchers from the University of Santiago found the species",
        ],
        ["CNN", "Chile", "Andes", "Camila Rojas", "University of Santiago"],
        [
            ("@placeholder said her team had spent two years searching the forest at night.", "Camila Rojas"),
            ("Conservation groups are calling on the government of @placeholder to protect the forest.", "Chile"),
            ("Other rare frogs have been found at high altitudes elsewhere in the @placeholder.", "Andes"),
        ],
    ),
    (
        "(CNN) -- Passengers on a flight from Dublin to New York were stuck on the runway in Dublin for "
        "six hours on Monday after a snowstorm closed John F. Kennedy International Airport. The "
        "airline, Emerald Skies, offered food vouchers but said it could not let passengers leave the "
        "plane for security reasons. One traveller, Siobh\u00e1n Kelly, said the children on board had "
        'been "remarkably patient".',
        ["The flight to New York was held on the runway for six hours", "Emerald Skies apologised to passengers"],
        ["CNN", "Dublin", "New York", "John F. Kennedy International Airport", "Emerald Skies", "Siobh\u00e1n Kelly"],
        [
            ("@placeholder said it would refund the fares of everyone on the delayed flight.", "Emerald Skies"),
            (
                "@placeholder, who was travelling with her two sons, posted photos of the plane's cabin online.",
                "Siobh\u00e1n Kelly",
            ),
            (
                "Snow ploughs worked through the night to clear the runways at @placeholder.",
                "John F. Kennedy International Airport",
            ),
        ],
    ),
    (
        "By Staff Reporter . Oakfield Primary School in Leeds has banned homework for children under "
        "the age of nine, saying pupils should spend their evenings reading and playing instead. Head "
        "teacher David Okafor said the decision followed a survey in which most parents said homework "
        "caused arguments at home. The Association of Primary Educators said other schools were "
        "watching the experiment closely.",
        [
            "Oakfield Primary School says younger pupils should read and play instead",
            "Parents said homework caused arguments at home",
        ],
        ["Oakfield Primary School", "Leeds", "David Okafor", "Association of Primary Educators"],
        [
            (
                "@placeholder said reading levels would be checked at the end of the year to see whether the change had worked.",
                "David Okafor",
            ),
            (
                "Older pupils at @placeholder will still be given one piece of homework a week.",
                "Oakfield Primary School",
            ),
            (
                "A spokesman for the @placeholder said there was little evidence that homework helps young children.",
                "Association of Primary Educators",
            ),
        ],
    ),
    (
        "(CNN) -- Divers off the coast of Sicily have found the wreck of a Roman cargo ship still loaded "
        "with hundreds of clay jars. The ship, which sank around 2,000 years ago, lies at a depth of 90 "
        "metres near the island of Favignana. Archaeologist Marco Bellini of the Sea Heritage Office "
        "said the jars probably carried wine or olive oil from North Africa.",
        ["The wreck lies 90 metres deep near Favignana", "The jars may have carried wine or olive oil"],
        ["CNN", "Sicily", "Roman", "Favignana", "Marco Bellini", "Sea Heritage Office", "North Africa"],
        [
            ("@placeholder said robots would be used to lift several of the jars to the surface.", "Marco Bellini"),
            (
                "Ships carrying goods from @placeholder to Rome often sailed past the western tip of Sicily.",
                "North Africa",
            ),
            (
                "Local fishermen had long reported snagging their nets on the seabed off @placeholder, a small island west of Sicily.",
                "Favignana",
            ),
        ],
    ),
    (
        "(CNN) -- A 94-year-old woman from Ohio has graduated from college more than seventy years after "
        "she first enrolled. Dorothy Mills began studying history at Westbury College in 1948 but left "
        "to care for her family. She returned to her studies online during the pandemic and received "
        "her degree at a ceremony on Saturday, cheered on by her eleven grandchildren.",
        ["Dorothy Mills first enrolled at Westbury College in 1948", "She finished her history degree online"],
        ["CNN", "Ohio", "Dorothy Mills", "Westbury College"],
        [
            ("@placeholder said she hoped her story would encourage others never to give up.", "Dorothy Mills"),
            ("The president of @placeholder presented the degree in person.", "Westbury College"),
            ("She has lived in the same small town in @placeholder all her life.", "Ohio"),
        ],
    ),
    (
        "By Staff Reporter . Supermarket chain FreshWay will stop selling fruit and vegetables in "
        "plastic packaging at all of its 300 stores in Britain by the end of next year. Chief executive "
        "Sandra Cole said the move would save around 5,000 tonnes of plastic a year. The environmental "
        "group Clean Seas welcomed the plan but urged other supermarkets to go further.",
        [
            "FreshWay will remove plastic packaging from fruit and vegetables",
            "The move will save around 5,000 tonnes of plastic a year",
        ],
        ["FreshWay", "Britain", "Sandra Cole", "Clean Seas"],
        [
            ("@placeholder said customers had asked for the change in large numbers.", "Sandra Cole"),
            ("Campaigners at @placeholder said plastic waste was still washing up on beaches every day.", "Clean Seas"),
            ("Rival supermarkets in @placeholder are expected to announce similar plans.", "Britain"),
        ],
    ),
    (
        "(CNN) -- A Japanese robot designed to help older people get out of bed has won an "
        "international engineering prize in Geneva. The robot, called Kaigo, was built by a team from "
        "Tohoku Robotics Lab led by engineer Haruto Sato. Judges praised its soft arms, which can lift "
        "a person weighing up to 100 kilograms without causing discomfort.",
        ["Kaigo helps older people get out of bed", "The robot won an engineering prize in Geneva"],
        ["CNN", "Japanese", "Geneva", "Kaigo", "Tohoku Robotics Lab", "Haruto Sato"],
        [
            ("@placeholder said his grandmother had been the inspiration for the project.", "Haruto Sato"),
            ("The team plans to test @placeholder in ten care homes next year.", "Kaigo"),
            ("This year's prize ceremony in @placeholder attracted more than 200 entries from 40 countries.", "Geneva"),
        ],
    ),
    (
        "(CNN) -- Thousands of runners dressed as superheroes took part in a charity race in Sydney on "
        "Sunday, raising money for Harbourside Children's Hospital. Organiser Mia Thompson said more "
        "than $400,000 had been raised. The fastest runner, dressed as a green caterpillar, finished "
        "the five-kilometre course in 16 minutes.",
        ["Runners in Sydney dressed as superheroes for charity", "The race raised more than $400,000"],
        ["CNN", "Sydney", "Harbourside Children's Hospital", "Mia Thompson"],
        [
            ("@placeholder said next year's race would include a special course for wheelchair users.", "Mia Thompson"),
            ("The money will pay for a new playroom at @placeholder.", "Harbourside Children's Hospital"),
            ("The race has been held in @placeholder every spring since 2010.", "Sydney"),
        ],
    ),
    (
        "By Staff Reporter . A rare white moose has been photographed in the forests of V\u00e4rmland in "
        "western Sweden. Amateur photographer Nils Ekstr\u00f6m captured the animal crossing a road at "
        "dawn. Officials at the V\u00e4rmland Wildlife Service said white moose are not albinos but "
        "carry a gene that gives them pale fur.",
        ["Nils Ekstr\u00f6m photographed the white moose at dawn", "White moose carry a gene that gives them pale fur"],
        ["V\u00e4rmland", "Sweden", "Nils Ekstr\u00f6m", "V\u00e4rmland Wildlife Service"],
        [
            (
                "@placeholder said he had waited by the road every morning for two weeks before the moose appeared.",
                "Nils Ekstr\u00f6m",
            ),
            (
                "Officials from the @placeholder asked drivers to slow down in the area.",
                "V\u00e4rmland Wildlife Service",
            ),
            ("Only a few hundred white moose are thought to live in the whole of @placeholder.", "Sweden"),
        ],
    ),
    (
        "(CNN) -- The Belgian town of Oudenveld will close its centre to cars every Sunday from next "
        "month, the town council announced on Tuesday. Deputy mayor Lotte Peeters said the plan would "
        "make the streets safer for children and bring more visitors to local shops. The bus company "
        "Flandria Lines will run free shuttle buses from car parks on the edge of town.",
        ["Oudenveld's centre will be car-free on Sundays", "Flandria Lines will run free shuttle buses"],
        ["CNN", "Belgian", "Oudenveld", "Lotte Peeters", "Flandria Lines"],
        [
            (
                "@placeholder said shop owners had at first opposed the idea but were now mostly in favour.",
                "Lotte Peeters",
            ),
            ("Drivers who ignore the ban in @placeholder will face a fine of 58 euros.", "Oudenveld"),
            ("Extra drivers have been hired by @placeholder to run the shuttle service.", "Flandria Lines"),
        ],
    ),
    (
        "(CNN) -- A wallet lost in a cinema in Wichita, Kansas, has been returned to its owner 46 years "
        "after he dropped it. Workers renovating the old Starlight Cinema found it behind a wall. "
        "Inside were a library card, a photo and a ticket stub for a 1977 film. The owner, Raymond "
        "Fuller, now 81 and living in Denver, said the photo showed his late wife, Joan.",
        ["The wallet was found behind a wall at the Starlight Cinema", "Raymond Fuller lost it in 1977"],
        ["CNN", "Wichita", "Kansas", "Starlight Cinema", "Raymond Fuller", "Denver", "Joan"],
        [
            ("@placeholder said he had searched everywhere for the wallet on the night he lost it.", "Raymond Fuller"),
            ("The builders working at the @placeholder tracked him down through an online search.", "Starlight Cinema"),
            ("He said the picture of @placeholder was the most precious thing in it.", "Joan"),
        ],
    ),
    (
        "By Staff Reporter . A bakery in Vienna has set a new record for the longest strudel ever made, "
        "measuring 210 metres. More than forty bakers from B\u00e4ckerei Huber worked through the night "
        "to roll out the pastry in a city park. Owner Franz Huber said the strudel was cut into 6,000 "
        "slices and sold to raise money for the Vienna Food Bank.",
        [
            "Bakers from B\u00e4ckerei Huber made a 210-metre strudel",
            "The money raised will go to the Vienna Food Bank",
        ],
        ["Vienna", "B\u00e4ckerei Huber", "Franz Huber", "Vienna Food Bank"],
        [
            (
                "@placeholder said his grandfather had baked strudel in the same neighbourhood for fifty years.",
                "Franz Huber",
            ),
            ("Every slice was sold within two hours, and all the money went to the @placeholder.", "Vienna Food Bank"),
            (
                "Staff at @placeholder have already started planning an even longer strudel for next year.",
                "B\u00e4ckerei Huber",
            ),
        ],
    ),
    (
        "(CNN) -- Volunteers in Kenya planted more than one million tree seedlings in a single day on "
        "Saturday as part of a campaign to restore the forests around Mount Kenya. The campaign is run "
        "by the Greenline Trust, and its coordinator, Amina Njoroge, said schools, churches and "
        "businesses had all taken part.",
        ["More than a million seedlings were planted around Mount Kenya", "The Greenline Trust organised the campaign"],
        ["CNN", "Kenya", "Mount Kenya", "Greenline Trust", "Amina Njoroge"],
        [
            ("@placeholder said the group hoped to plant ten million trees by the end of the decade.", "Amina Njoroge"),
            ("Forests on the slopes of @placeholder provide water for millions of people.", "Mount Kenya"),
            ("Donations to the @placeholder have doubled since the campaign began.", "Greenline Trust"),
        ],
    ),
    (
        "(CNN) -- An Italian mountain village with only 40 residents is offering houses for one euro to "
        "families who agree to move there. Mayor Giulia Rinaldi said Castelmonte lost its school in "
        "2015 and would not survive without new people. The village lies in the hills of Abruzzo, "
        "about two hours' drive from Rome.",
        ["Houses in Castelmonte are being sold for one euro", "The village has only 40 residents"],
        ["CNN", "Italian", "Giulia Rinaldi", "Castelmonte", "Abruzzo", "Rome"],
        [
            (
                "@placeholder said more than 3,000 people had asked about the houses in the first week.",
                "Giulia Rinaldi",
            ),
            (
                "Many of the empty houses in @placeholder were left by families who moved abroad in the 1960s.",
                "Castelmonte",
            ),
            (
                "Buyers must agree to renovate within three years, under rules set by the regional government of @placeholder.",
                "Abruzzo",
            ),
        ],
    ),
]


# =======================================================================================
# Building rows
# =======================================================================================
def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def find_all(haystack: str, needle: str) -> list[int]:
    """Start offsets of ``needle`` in ``haystack`` that are not inside a longer word."""
    starts, i = [], haystack.find(needle)
    while i != -1:
        before = haystack[i - 1] if i > 0 else " "
        after = haystack[i + len(needle)] if i + len(needle) < len(haystack) else " "
        if not (_word_char(needle[0]) and _word_char(before)) and not (_word_char(needle[-1]) and _word_char(after)):
            starts.append(i)
        i = haystack.find(needle, i + 1)
    return starts


def sst_examples():
    items = []
    for line in SST.strip().splitlines():
        label, text = (part.strip() for part in line.split("|", 1))
        items.append(
            {
                "answer": ["positive" if label == "+" else "negative"],
                "question": SST_QUESTION,
                "id": None,
                "context": text + " ",
            }
        )
    pos = [r for r in items if r["answer"] == ["positive"]]
    neg = [r for r in items if r["answer"] == ["negative"]]
    test = pos[:6] + neg[:6]
    train = pos[6:] + neg[6:]
    return [[r] for r in test], [[r] for r in train]


def mnli_examples(rng):
    ids = iter(rng.sample(range(100, 99999), 3 * len(MNLI)))
    groups = []
    for genre, premise, ent, neu, con in MNLI:
        groups.append(
            [
                [
                    {
                        "genre": genre,
                        "answer": [label],
                        "question": MNLI_QUESTION,
                        "id": str(next(ids)),
                        "context": [premise, hyp],
                    }
                ]
                for label, hyp in (("entailment", ent), ("neutral", neu), ("contradiction", con))
            ]
        )
    test = [ex for g in groups[:4] for ex in g]
    train = [ex for g in groups[4:] for ex in g]
    return test, train


_ENTITY = re.compile(r"\[\[(PER|ORG|LOC):([^\]]+)\]\]")


def ner_examples(block: str, rng, max_id: int):
    sentences = [line.strip() for line in block.strip().splitlines()]
    ids = rng.sample(range(1, max_id), len(sentences))
    examples: list[list[dict[str, Any]]] = []
    for sentence, number in zip(sentences, ids, strict=True):
        context = _ENTITY.sub(lambda m: m.group(2), sentence)
        assert "[[" not in context and "]]" not in context and "  " not in context, sentence
        found: dict[str, list[str]] = {"PER": [], "ORG": [], "LOC": []}
        for m in _ENTITY.finditer(sentence):
            if m.group(2) not in found[m.group(1)]:
                found[m.group(1)].append(m.group(2))
        examples.append(
            [
                {
                    "answer": found[t] or [""],
                    "question": NER_QUESTIONS[t],
                    "id": f"{number}_{NER_SUFFIX[t]}",
                    "context": context,
                }
                for t in ("PER", "ORG", "LOC")
            ]
        )
    test, train = examples[:4], examples[4:]
    # Like the official data: one training sentence shares its id with a test sentence.
    shared = test[1][0]["id"].split("_")[0]
    for row in train[7]:
        row["id"] = f"{shared}_{row['id'].split('_')[1]}"
    return test, train


def _span(context: str, answer) -> dict:
    text, occurrence = (answer, 0) if isinstance(answer, str) else answer
    starts = find_all(context, text)
    assert len(starts) > occurrence, (text, context[:60])
    return {"text": text, "answer_start": starts[occurrence]}


def squad_examples():
    groups = []
    for context, questions in SQUAD:
        group = []
        for question, answers, plausible in questions:
            qid = hashlib.md5((context + "\n" + question).encode("utf-8")).hexdigest()[:24]
            if answers is None:
                row = {
                    "plausible_answers": [_span(context, plausible)],
                    "question": question,
                    "id": qid,
                    "answer": [],
                    "is_impossible": True,
                    "context": context,
                }
            else:
                row = {
                    "question": question,
                    "id": qid,
                    "answer": [_span(context, a) for a in answers],
                    "is_impossible": False,
                    "context": context,
                }
            group.append([row])
        groups.append(group)
    test = [ex for g in groups[:3] for ex in g]
    train = [ex for g in groups[3:] for ex in g]
    return test, train


def record_examples(rng):
    numbers = rng.sample(range(10, 99999), len(RECORD))
    groups = []
    for number, (body, highlights, names, queries) in zip(numbers, RECORD, strict=True):
        context = body + "".join("\n@highlight\n" + h for h in highlights)
        taken, spans = [False] * len(context), []
        for name in sorted(names, key=len, reverse=True):  # longest first, no overlaps
            starts = [s for s in find_all(context, name) if not any(taken[s : s + len(name)])]
            assert starts, (name, body[:60])
            for s in starts:
                taken[s : s + len(name)] = [True] * len(name)
                spans.append((s, s + len(name)))
        spans.sort()
        entities = [{"start": s, "end": e - 1} for s, e in spans]  # inclusive end, like CLUES
        group = []
        for q, (cloze, answer) in enumerate(queries, start=1):
            assert cloze.count("@placeholder") == 1, cloze
            start = next(s for s, e in spans if context[s:e] == answer)
            question = (
                f'According to claims in the suit, "{cloze}". What is @placeholder?'
                if RECORD_OFFICIAL_WRAPPER
                else cloze
            )
            group.append(
                [
                    {
                        "id": f"ReCoRD_{number}_{q}",
                        "context": context,
                        "entities": entities,
                        "question": question,
                        "answer": [{"text": answer, "answer_start": start}],
                        "is_impossible": False,
                    }
                ]
            )
        groups.append(group)
    test = [ex for g in groups[:4] for ex in g]
    train = [ex for g in groups[4:] for ex in g]
    return test, train


# =======================================================================================
# Training files: two disjoint 30-shot pools, nested 10 < 20 < 30, reshuffled per file
# =======================================================================================
def first10_ok(task: str, chain: list) -> bool:
    first = chain[:10]
    if task == "sst2":
        return {ex[0]["answer"][0] for ex in first} == {"positive", "negative"}
    if task == "mnli":
        return {ex[0]["answer"][0] for ex in first} == {"entailment", "neutral", "contradiction"}
    if task == "squad2":
        return {ex[0]["is_impossible"] for ex in first} == {True, False}
    return True


def training_files(task: str, pool: list, rng) -> dict:
    assert len(pool) == 60, (task, len(pool))
    while True:
        order = pool[:]
        rng.shuffle(order)
        chains = (order[:30], order[30:])
        if all(first10_ok(task, c) for c in chains):
            break
    files = {}
    for chain, mapping in zip(chains, CHAIN_FILES[NESTING.get(task, "keep")], strict=True):
        prev: list = []
        for shots in SHOTS:
            rows_of = chain[:shots]
            while True:
                shuffled = rows_of[:]
                rng.shuffle(shuffled)
                if not prev or shuffled[: len(prev)] != prev:
                    break
            prev = shuffled
            files[(shots, mapping[shots])] = shuffled
    return files


def write_jsonl(path: Path, examples: list, *, number_rows: bool = False):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    for example in examples:
        for row in example:
            row = dict(row)
            if number_rows:
                row["id"] = len(lines) + 1
            lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# Each registry task's examples (test, training pool), built in registry order from one random stream.
EXAMPLES = {
    "sst2": lambda rng: sst_examples(),
    "mnli": mnli_examples,
    "conll03": lambda rng: ner_examples(CONLL, rng, 14000),
    "wikiann": lambda rng: ner_examples(WIKIANN, rng, 10000),
    "squad2": lambda rng: squad_examples(),
    "record": record_examples,
}


def registry_tasks() -> dict:
    """The CLUES tasks of the registry (plain Python), each with its demo examples; one without any is an error."""
    sys.path.insert(0, str(HERE.parents[1]))
    from tasks_data.registry import CLUES_TASKS

    missing = [slug for slug in CLUES_TASKS if slug not in EXAMPLES]
    if missing:
        raise SystemExit(f"CLUES tasks with no demo texts here: {', '.join(missing)} (add them)")
    return CLUES_TASKS


def generate():
    tasks = registry_tasks()
    rng = random.Random(SEED)
    built = {slug: EXAMPLES[slug](rng) for slug in tasks}
    if OUT.exists():
        shutil.rmtree(OUT)
    for task, (test, train) in built.items():
        folder, prefix = tasks[task].clues_folder, tasks[task].clues_prefix
        test = test[:]
        rng.shuffle(test)
        write_jsonl(OUT / folder / f"{prefix}_test.jsonl", test, number_rows=(task == "sst2"))
        for (shots, split), examples in sorted(training_files(task, train, rng).items()):
            write_jsonl(OUT / folder / f"{prefix}_train_{shots}_{split}.jsonl", examples, number_rows=(task == "sst2"))


# =======================================================================================
# Checks: read the files back and test every rule the importer and the tests rely on
# =======================================================================================
KEYS = {
    "sst2": ["answer", "question", "id", "context"],
    "mnli": ["genre", "answer", "question", "id", "context"],
    "conll03": ["answer", "question", "id", "context"],
    "wikiann": ["answer", "question", "id", "context"],
    "squad2": ["question", "id", "answer", "is_impossible", "context"],
    "record": ["id", "context", "entities", "question", "answer", "is_impossible"],
}


def _load(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\n\n" not in text, path
    return [json.loads(line) for line in text.splitlines()]


def _units(task: str, rows: list) -> list:
    """Group rows into examples (3 rows per NER sentence); return content keys in order."""
    if task in ("conll03", "wikiann"):
        assert len(rows) % 3 == 0
        keys = []
        for i in range(0, len(rows), 3):
            trio = rows[i : i + 3]
            number = trio[0]["id"].split("_")[0]
            assert [r["id"] for r in trio] == [f"{number}_{s}" for s in "123"], trio
            assert [r["question"] for r in trio] == [NER_QUESTIONS[t] for t in ("PER", "ORG", "LOC")]
            assert len({r["context"] for r in trio}) == 1
            keys.append(trio[0]["context"])
        return keys
    return [json.dumps([r["context"], r["question"]], ensure_ascii=False) for r in rows]


def _check_row(task: str, row: dict, where: str):
    keys = KEYS[task]
    if task == "squad2" and "plausible_answers" in row:
        keys = ["plausible_answers"] + keys
    assert list(row) == keys, (where, list(row))
    ctx = row["context"]
    if task == "sst2":
        assert isinstance(row["id"], int) and row["question"] == SST_QUESTION
        assert row["answer"] in (["positive"], ["negative"])
        assert ctx == ctx.lower() and ctx.endswith(" ") and not ctx.endswith("  "), where
    elif task == "mnli":
        assert isinstance(row["id"], str) and row["id"].isdigit() and row["question"] == MNLI_QUESTION
        assert row["genre"] in ("fiction", "government", "slate", "telephone", "travel")
        assert row["answer"] in (["entailment"], ["neutral"], ["contradiction"])
        assert isinstance(ctx, list) and len(ctx) == 2 and all(isinstance(c, str) and c for c in ctx)
    elif task in ("conll03", "wikiann"):
        assert re.fullmatch(r"\d+_[123]", row["id"]), where
        ans = row["answer"]
        assert ans == [""] or (ans and len(set(ans)) == len(ans) and all(a and a in ctx for a in ans)), where
    elif task == "squad2":
        assert re.fullmatch(r"[0-9a-f]{24}", row["id"]), where
        assert isinstance(row["is_impossible"], bool)
        spans = row["answer"] + row.get("plausible_answers", [])
        assert (row["answer"] == []) == row["is_impossible"], where
        assert row["is_impossible"] == ("plausible_answers" in row), where
        assert 0 <= len(row["answer"]) <= 3
        for a in spans:
            assert list(a) == ["text", "answer_start"] and isinstance(a["answer_start"], int)
            assert ctx[a["answer_start"] : a["answer_start"] + len(a["text"])] == a["text"], (where, a)
    elif task == "record":
        assert re.fullmatch(r"ReCoRD_\d+_\d+", row["id"]) and row["is_impossible"] is False
        assert "\n@highlight\n" in ctx
        q = row["question"]
        if RECORD_OFFICIAL_WRAPPER:
            assert q.startswith('According to claims in the suit, "') and q.endswith('". What is @placeholder?')
            assert q.count("@placeholder") == 2
        else:
            assert q.count("@placeholder") == 1
        cands: dict[str, set[int]] = {}
        for e in row["entities"]:
            assert list(e) == ["start", "end"] and 0 <= e["start"] <= e["end"] < len(ctx)
            text = ctx[e["start"] : e["end"] + 1]
            assert text == text.strip() and text, (where, e)
            cands.setdefault(text, set()).add(e["start"])
        assert len(row["answer"]) == 1, where
        a = row["answer"][0]
        assert list(a) == ["text", "answer_start"]
        assert a["text"] in cands and a["answer_start"] in cands[a["text"]], (where, a)


def verify():
    all_text = ""
    for task, spec in registry_tasks().items():
        folder, prefix, nesting = spec.clues_folder, spec.clues_prefix, NESTING.get(task, "keep")
        names = {f"{prefix}_test.jsonl"} | {f"{prefix}_train_{k}_{s}.jsonl" for k in SHOTS for s in SPLITS}
        present = {p.name for p in (OUT / folder).iterdir()}
        assert present == names, (task, present ^ names)
        per = spec.train_rows_per_shot
        files = {}
        for name in sorted(names):
            rows = _load(OUT / folder / name)
            for i, row in enumerate(rows, start=1):
                _check_row(task, row, f"{folder}/{name}:{i}")
                all_text += json.dumps(row["context"], ensure_ascii=False)
            if task == "sst2":
                assert [r["id"] for r in rows] == list(range(1, len(rows) + 1)), name
            files[name] = (rows, _units(task, rows))
        test_rows, test_keys = files[f"{prefix}_test.jsonl"]
        assert len(test_rows) == 12, (task, len(test_rows))
        assert len(set(test_keys)) == len(test_keys)
        train = {(k, s): files[f"{prefix}_train_{k}_{s}.jsonl"] for k in SHOTS for s in SPLITS}
        for (k, s), (rows, keys) in train.items():
            assert len(rows) == k * per and len(set(keys)) == k, (task, k, s)
            assert not set(keys) & set(test_keys), (task, k, s, "overlaps the test file")
            if task == "sst2":
                assert {r["answer"][0] for r in rows} == {"positive", "negative"}, (k, s)
            if task == "mnli":
                assert {r["answer"][0] for r in rows} == {"entailment", "neutral", "contradiction"}, (k, s)
            if task == "squad2":
                assert {r["is_impossible"] for r in rows} == {True, False}, (k, s)
        for chain in CHAIN_FILES[nesting]:
            k10, k20, k30 = (train[(k, chain[k])][1] for k in SHOTS)
            assert set(k10) < set(k20) < set(k30), (task, chain)
            assert k20[:10] != k10 and k30[:20] != k20, (task, chain, "smaller file is a prefix")
        assert not set(train[(30, 1)][1]) & set(train[(30, 2)][1]), (task, "30-shot files overlap")
        # The same example carries the same id in every training file (not for SST: row numbers).
        if task != "sst2":
            ids: dict[str, object] = {}  # example id by (context, question)
            for rows, _ in train.values():
                for r in rows:
                    key = json.dumps([r["context"], r["question"]], ensure_ascii=False)
                    assert ids.setdefault(key, r["id"]) == r["id"], (task, r["id"])

        if task in ("conll03", "wikiann"):
            counts = [len([a for a in r["answer"] if a]) for r in test_rows]
            assert 0 in counts and 1 in counts and max(counts) >= 2, (task, counts)
            assert any(r["context"].count(a) >= 2 for r in test_rows for a in r["answer"] if a), (
                task,
                "no test entity occurs twice",
            )
            test_ids = {r["id"]: r["context"] for r in test_rows}
            clash = [
                r
                for rows, _ in train.values()
                for r in rows
                if r["id"] in test_ids and test_ids[r["id"]] != r["context"]
            ]
            assert clash, (task, "no train/test id collision")
        if task == "squad2":
            impossible = sum(r["is_impossible"] for r in test_rows)
            assert 5 <= impossible <= 7, impossible
            assert any(len(r["answer"]) >= 2 for r in test_rows)
            assert any(len(r["answer"]) != len({a["text"] for a in r["answer"]}) for r in test_rows)
        if task in ("sst2", "mnli"):
            labels = [r["answer"][0] for r in test_rows]
            assert max(labels.count(x) for x in set(labels)) - min(labels.count(x) for x in set(labels)) <= 1
    for needle in ('"', "'", "&", "<", "\u00e9", "AT&T", "x < y", "<b>", "Jos\u00e9 \u00c1lvarez"):
        assert needle in all_text, needle
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the existing files")
    args = parser.parse_args(argv)
    if not args.check:
        generate()
    verify()
    for spec in registry_tasks().values():
        folder, prefix = spec.clues_folder, spec.clues_prefix
        counts = ", ".join(
            f"{p.name[len(prefix) + 1 : -len('.jsonl')]}={len(p.read_text(encoding='utf-8').splitlines())}"
            for p in sorted((OUT / folder).iterdir())
        )
        print(f"{folder}: {counts}")
    print("demo data OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
