"""The help screen: what the panels mean and every key binding."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# localrag — help

Ask a question about the notes in the folder and press **Enter**. The answer streams in
and cites the passages it used as **[1]**, **[2]** …; the list under the answer shows
every passage given to the model (*cited* or *context*). The chat is a conversation:
a follow-up such as "where was she born?" is searched for with the earlier turns in mind
(the line *searched for: …* shows what was searched), and the answer sees the earlier turns.
The app reopens the last conversation when it starts.

Indexing runs in the background: **Passages** is the fast phase (files read, split and
embedded: search works as soon as it is done); **Graph** is the slow phase (the local
model extracts facts). The folder is watched: edits, new files, deletions and renames
are picked up within a second. Files that cannot be indexed are listed under
**Skipped** with the reason.

| key | what it does |
|---|---|
| Enter | ask the question in the input |
| /tag:NAME /path:DIR/ | in the question: answer only from notes with that tag (nested tags too) or under that folder; /-path:DIR/ leaves one out |
| Up / Down | previous / next question (history) |
| F1 | this help (Esc closes it) |
| F2 | jump to the citations of the last answer (Up/Down, Enter opens one) |
| click [n] | open citation n beside the chat |
| F3 | reasoning path: hop by hop, the facts kept and what to look for next |
| F4 | cost of the last answer: LLM calls, tokens by phase, time, memory |
| F5 | index status: files, passages, graph, model, watcher |
| F6 | skipped files and why |
| F7 | stop / resume indexing (a resumed sync catches up with every change) |
| F8 / F9 | the last answer was wrong (memory unlearns it; asking again retrieves afresh) / right |
| Ctrl+T | next retrieval strategy |
| Ctrl+N | new conversation (follow-ups are understood within a conversation) |
| Ctrl+O | earlier conversations: reopen one and continue it |
| Ctrl+P | command palette: strategy, model, indexing, panels |
| Esc | back to the question input |
| Ctrl+Q | quit |

**Strategies**: `auto` picks `graph` (PPR + dense + lexical, no model) unless the model has
at least 3B parameters and the graph is built, then `neuropath` starting from it; `dense`
(embeddings), `lexical` (BM25), `hybrid` (both), and the graph strategies when they are
installed. **Models** (Ctrl+P, *Models: list and switch*): every GGUF file found — `models/`,
the bundled SmolLM2, the Hugging Face cache, LM Studio, Ollama — with its size, parameters,
quantisation, context and chat template; switching loads the new model in the background.
The header shows where its layers run: `CPU`, or the GPU backend and the layers offloaded.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "app.pop_screen", "Close help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 95%; height: 90%; border: thick $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
