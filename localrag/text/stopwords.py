"""The word lists each rule leaves out, one per use: they differ on purpose, each tuned where it is
used, so a word added to one changes only that use. Lower case throughout."""

from __future__ import annotations

# function words an answer candidate (a word n-gram) neither starts nor ends with (answer/spans.py)
NGRAM_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being as that this these those "
    "it its he she they his her their him them who whom whose which what when where why how there here not no "
    "also has have had do does did so than then into onto over under about after before during while".split()
)
# an answer candidate's n-gram neither opens nor ends with these either: pronouns, and adverbs of degree
# and time ("still", "most", "I" were candidates for the sample notes' lighthouse question)
CANDIDATE_EDGE_STOPWORDS = NGRAM_STOPWORDS | frozenset(
    "i me my we us our you your still just even only already often always never usually most more less much "
    "very quite".split()
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
# common English words that only add noise to a full-text OR query (store/lexical.py)
LEXICAL_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how i in is it its of on or she "
    "that the their them they this to was were what when where which who whom whose why will with you your "
    "than then there these those into about after before".split()
)
# the words of a question that are not its topic, including the asking verbs ("tell me about"; conversation/resolve.py)
TOPIC_STOPWORDS = frozenset(
    "who whom whose what which when where why how is are was were do does did the a an of in on at to for by "
    "with from and or that this it its he she they his her their be been has have had can could will would "
    "should name tell me about there".split())
# the words a rewritten question may add or drop freely: function words, pronouns, modals, "former" /
# "latter" and the "s" a normalised possessive leaves (conversation/rewrite.py)
REWRITE_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for by with from and or but as is are was were be been being do does did has have "
    "had who whom whose what which when where why how that this these those it its he she him his her hers they "
    "them their there one ones same former latter about also so than then into onto over under after before "
    "can could will would should may might must not no yes s".split())
# the words of a question whose capital is grammar, not a name (retrieve/neuropath/entities.py)
NER_FUNCTION_WORDS = frozenset("a an and at by for from in of on or the to with".split())
# the words an answer shares with any passage, and the prompt's own words, left out when an answer
# with no [n] markers is attributed to the passage whose words it covers (answer/__init__.py)
ATTRIBUTION_STOPWORDS = frozenset(
    "the and for with that this from was were are has have had not but its into what which who "
    "when where how does did their there they them about notes passage passages answer".split())
# a relation made only of these says nothing ("was a", "of the"; kg/rules.py)
RELATION_WEAK_WORDS = frozenset(
    "a an the and or of to in on at by for with as is was are were be been its his her their".split())
