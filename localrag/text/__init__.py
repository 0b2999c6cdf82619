"""Text as every layer reads it: ``sentences`` (where sentences end), ``words`` (tokenisers,
content words, stems), ``stopwords`` (the word lists each rule leaves out), ``spans`` (candidate
names, dates, numbers and titles found without a model) and ``normalise`` (the keys names and
phrases are compared by). It imports nothing else of localrag, so the store, ingest, the graph
phase, retrieval, answers and conversations all use it."""
