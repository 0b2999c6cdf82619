from localrag.ingest.chunker import chunk_text, count_tokens

NOTE = """# Garden

Intro paragraph about the garden, which is small but productive.

## Tomatoes

""" + ("Tomatoes need sun and water every day in summer. " * 30) + """

## Beans

Beans climb the north fence.
"""


def test_headings_start_passages_and_line_ranges_are_exact():
    chunks = chunk_text(NOTE, "markdown", "Garden", 100, 300)
    lines = NOTE.split("\n")
    for c in chunks:
        body = "\n".join(lines[c.start_line - 1:c.end_line])
        assert c.text.strip() == body.strip()
    tomato = [c for c in chunks if "Tomatoes need sun" in c.text]
    assert tomato and all(c.heading.startswith("Garden > Tomatoes") for c in tomato)
    assert any("Beans climb" in c.text and "Beans" in c.heading for c in chunks)


def test_sizes_are_bounded():
    text = "\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(20))
    chunks = chunk_text(text, "text", "T", 100, 300)
    assert len(chunks) > 3
    assert all(count_tokens(c.text) <= 300 for c in chunks)
    assert all(count_tokens(c.text) >= 100 for c in chunks[:-1])


def test_a_lead_in_opens_the_passage_of_what_it_announces():
    # a command-line note: each item announces the command line below it
    items = [f"- Extract archive number {i} into a chosen folder with its permissions kept:\n\n`tar xf archive{i}.tar`"
             for i in range(12)]
    text = "# tar\n\n> Archiving utility.\n\n" + "\n\n".join(items) + "\n"
    chunks = chunk_text(text, "markdown", "tar", 32, 65)  # without the rule 4 passages end with a lead-in
    assert len(chunks) > 2
    lines = text.split("\n")
    for c in chunks:
        assert not c.text.rstrip().endswith(":"), c.text
        assert c.text.strip() == "\n".join(lines[c.start_line - 1:c.end_line]).strip()
    for i in range(12):
        [holder] = [c for c in chunks if f"archive number {i} " in c.text]
        assert f"`tar xf archive{i}.tar`" in holder.text


def test_a_lead_in_alone_under_its_heading_is_not_carried():
    text = "# Setup\n\nRun this:\n\n```\n" + "step\n" * 200 + "```\n"
    chunks = chunk_text(text, "markdown", "Setup", 40, 90)
    assert "Run this:" in chunks[0].text  # the heading never stands alone in a passage


def test_one_huge_line_is_split():
    text = "x " * 5000
    chunks = chunk_text(text, "text", "", 100, 300)
    assert len(chunks) > 5
    assert all(count_tokens(c.text) <= 600 for c in chunks)


def test_embed_text_carries_heading_context_and_hash_changes_with_it():
    a = chunk_text("# A\n\n## S\n\nsame body text here", "markdown", "A")[0]
    b = chunk_text("# B\n\n## S\n\nsame body text here", "markdown", "B")[0]
    assert "A" in a.embed_text.splitlines()[0]
    assert a.sha256 != b.sha256


def test_rst_and_org_headings():
    rst = chunk_text("Title\n=====\n\nBody one " + "v " * 60 + "\n\nSection\n-------\n\nBody two " + "w " * 60, "rst", "Title")
    assert any("Section" in c.heading for c in rst)
    org = chunk_text("* Top\nBody " + "w " * 60 + "\n* Second\nMore text " + "z " * 60, "org", "Doc")
    assert any("Second" in c.heading for c in org)


def _refs_in(chunks) -> list[str]:
    from localrag.ingest.markdown import inline_refs

    return [link.target for c in chunks for link in inline_refs(c.text).links]


def test_a_long_line_of_links_is_never_cut_inside_a_link(embedder):
    from localrag.ingest.window import fit_window

    text = "# Links\n\n" + " ".join(f"[[Note {i}]]" for i in range(5000)) + "\n"
    chunks = chunk_text(text, "markdown", "Links", 100, 300)
    assert _refs_in(chunks) == [f"Note {i}" for i in range(5000)]  # a cut link ("[[Note" | "413]]") drops out
    fitted = fit_window(chunks, text, embedder)
    assert len(fitted) > len(chunks)  # the window step cut them again, still between links
    assert _refs_in(fitted) == [f"Note {i}" for i in range(5000)]


def test_embeds_and_code_spans_are_never_cut_by_sentence_word_or_character_cuts(embedder):
    from localrag.ingest.window import fit_window

    unit = "See `grep -r x. y` and ``a ` b. c`` then [[Dr. Who|the doctor]] and ![[plan v2. draft]]. "
    text = unit * 1500
    for chunks in (chunk_text(text, "text", "T", 100, 300), fit_window(chunk_text(text, "markdown", "T", 100, 300), text, embedder)):
        assert len(chunks) > 5
        for c in chunks:
            body = c.text.replace("\n", " ")
            assert body.count("[[") == body.count("]]") and body.count("`grep -r x. y`") == body.count("`grep")
            assert body.count("``a ` b. c``") * 2 == body.count("``")
        assert sum(c.text.count("![[plan v2. draft]]") for c in chunks) == 1500
    # one enormous "word" of links with no space is cut by characters, at link boundaries
    glued = "".join(f"[[n{i}]]" for i in range(3000))
    pieces = chunk_text(glued, "text", "", 100, 300)
    assert len(pieces) > 1 and all(p.text.startswith("[[") and p.text.endswith("]]") for p in pieces)
