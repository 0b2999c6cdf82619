"""Word pools for the synthetic scale corpus.

Passages are built from topic-specific nouns plus shared names, places and verbs, so
their embeddings spread over many directions (a corpus of near-identical sentences
would make every KNN trivially fast and meaningless).
"""

from __future__ import annotations

FIRST_NAMES = (
    "Ada Alvar Amara Anselm Astrid Basil Beatrix Bruno Camille Cassius Cora Dalia Desmond Dorian Edda Elias "
    "Elowen Emeric Esme Fabian Farah Felix Freya Gideon Greta Hana Hector Ilse Imran Ines Ivo Jasper Juno Kai "
    "Kasimir Lena Leopold Lior Lucia Magnus Mara Matteo Mina Nadia Nils Noor Oskar Otto Paloma Petra Quentin "
    "Rafael Rhea Rosa Rufus Saskia Silas Sofia Tamsin Teodor Thea Ulric Una Valentin Vera Wilhelmina Xavier "
    "Yara Yusuf Zelda Zoran"
).split()

LAST_NAMES = (
    "Abernathy Achterberg Balogun Bergstrom Castellanos Corrigan Dahlberg Delacroix Eriksen Esposito Falkner "
    "Fitzroy Gallagher Grunewald Hargreaves Holmberg Ibarra Ingram Jablonski Jovanovic Kaminski Kowalczyk "
    "Lindqvist Lockwood Marchetti Moreau Nakamura Novak Okafor Olsen Pemberton Petrov Quintero Radcliffe "
    "Rasmussen Salazar Sorensen Takahashi Thornbury Underhill Valdez Vasquez Whitcombe Wojcik Yamamoto "
    "Zielinski Ashdown Blackwood Carrow Dunmore Everly Fairweather Greaves Hollis Kestrel Merriweather"
).split()

PLACES = (
    "Aldermoor Brightwater Caskport Dunvale Eastmere Fernhollow Glenrock Harrowgate Ironbridge Juniper Bay "
    "Kingsreach Larkspur Millbrook Northwick Oakhaven Pinecrest Queensferry Ravenscar Saltmarsh Thistledown "
    "Upperfield Velmont Westerly Yarrowdale Zephyr Point Ashbourne Bramblecote Coldharbour Driftwood Emberly "
    "Foxhaven Greyfriars Hollowmere Inverleigh Kettlewell Lowestoft Marrowby Netherby Oldcastle"
).split()

ORGS = (
    "the Royal Society of Engineers", "the Northern Archive", "the Municipal Orchestra", "the Coastal Survey",
    "the Institute for Soil Studies", "the Guild of Clockmakers", "the River Authority", "the Observatory Trust",
    "the Folk Music Collective", "the Harbour Board", "the Botanical Garden", "the Railway Heritage Group",
    "the Public Library", "the Weavers' Cooperative", "the Mountain Rescue Team", "the Glassworks Union",
    "the Historical Society", "the Chess Federation", "the Beekeepers' Association", "the Film Institute",
)

TOPICS: dict[str, tuple[str, ...]] = {
    "astronomy": ("telescope", "nebula", "comet", "eclipse", "star chart", "orbit", "meteor shower", "lens"),
    "baking": ("sourdough", "oven", "rye flour", "starter culture", "pastry", "proofing basket", "crumb", "glaze"),
    "beekeeping": ("hive", "queen bee", "honeycomb", "smoker", "pollen", "swarm", "wax frame", "nectar flow"),
    "chess": ("opening", "endgame", "gambit", "rook", "tournament", "bishop pair", "pawn structure", "clock"),
    "clockmaking": ("escapement", "pendulum", "gear train", "mainspring", "dial", "balance wheel", "chime", "case"),
    "cycling": ("frame", "derailleur", "mountain pass", "time trial", "saddle", "peloton", "gradient", "tyre"),
    "film": ("screenplay", "camera crew", "premiere", "editing suite", "soundtrack", "festival", "close-up", "reel"),
    "gardening": ("compost", "raised bed", "seedling", "pruning", "greenhouse", "perennial", "mulch", "trellis"),
    "geology": ("basalt", "fault line", "sediment", "fossil bed", "quarry", "glacier", "mineral vein", "outcrop"),
    "medicine": ("vaccine", "clinic", "diagnosis", "ward", "surgeon", "clinical trial", "prescription", "fever"),
    "music": ("symphony", "violin", "conductor", "rehearsal", "choir", "sonata", "concert hall", "score"),
    "navigation": ("sextant", "lighthouse", "chart", "harbour", "tide table", "compass", "channel", "buoy"),
    "printing": ("press", "typeface", "ink", "pamphlet", "bookbinding", "woodcut", "proof sheet", "edition"),
    "railways": ("locomotive", "timetable", "signal box", "viaduct", "branch line", "station", "sleeper car", "track"),
    "textiles": ("loom", "wool", "dye", "tapestry", "spinning wheel", "linen", "pattern", "embroidery"),
    "architecture": ("facade", "arch", "blueprint", "vault", "courtyard", "timber frame", "spire", "foundation"),
    "cooking": ("stew", "spice market", "recipe", "cast-iron pan", "broth", "harvest feast", "pickles", "knife"),
    "mountaineering": ("summit", "crampons", "base camp", "ridge", "avalanche", "rope team", "ice axe", "col"),
    "photography": ("darkroom", "negative", "shutter", "portrait", "exposure", "tripod", "aperture", "print"),
    "sailing": ("schooner", "mainsail", "regatta", "keel", "crew", "headwind", "mooring", "rigging"),
    "pottery": ("kiln", "glaze", "wheel", "stoneware", "clay body", "firing", "slip", "vessel"),
    "robotics": ("actuator", "sensor", "controller", "gripper", "firmware", "servo", "prototype", "circuit board"),
    "ornithology": ("migration", "warbler", "nest box", "ringing station", "wetland", "heron", "field guide", "song"),
    "winemaking": ("vineyard", "barrel", "harvest", "cellar", "fermentation", "grape", "vintage", "cork"),
}

ADJECTIVES = (
    "ancient restored forgotten experimental famous modest remarkable unusual delicate sturdy elegant rare "
    "early late hand-made collaborative seasonal coastal rural urban northern southern quiet ambitious "
    "improvised traditional modern rugged fragile celebrated overlooked practical"
).split()

VERBS_PAST = (
    "built repaired studied documented designed restored catalogued exhibited taught measured photographed "
    "described mapped recorded funded rediscovered tested organised sketched translated"
).split()

PROFESSIONS = (
    "archivist engineer surveyor teacher physician curator carpenter cartographer chemist journalist "
    "librarian architect composer gardener pilot translator"
).split()
