"""The word lists each rule leaves out, one per use: they differ on purpose, each tuned where it is
used, so a word added to one changes only that use. Lower case throughout."""

from __future__ import annotations

# function words an answer candidate (a word n-gram) neither starts nor ends with (answer/spans.py)
NGRAM_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being as that this these those "
    "it its he she they his her their him them who whom whose which what when where why how there here not no "
    "also has have had do does did so than then into onto over under about after before during while".split()
)
# the content words of a question and of evidence (text/words.content_words): the n-gram list plus the
# generic nouns a question uses for its subject ("which film", "what country"), which name no answer
CONTENT_STOPWORDS = NGRAM_STOPWORDS | frozenset(
    "film song album book band person place name date year country city".split()
)
# capitalised words that start sentences without naming anything (text/spans.py trims them off a name)
LEADING_STOPWORDS = frozenset(
    "a an in on at he she it they this that these those his her its their after before when while however "
    "although as with from for by during since also but and or if there here some many most one each both "
    "other following we you our my your later then thus today yesterday what which who where why how "
    "according despite because under over between among until unless whether so not no yes".split()
)
# a name of one word is none of these: the leading words, "the", months and weekdays (text/spans.py)
SINGLE_NAME_STOPWORDS = LEADING_STOPWORDS | frozenset(
    "the january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
PRONOUNS = frozenset("he she it they his her its their him them".split())
