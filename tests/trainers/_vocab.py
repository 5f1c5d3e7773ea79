"""A tiny text classifier whose data mapping can depend on the process: the corpus, its tokenizer, the model.

32 short sentences over a lexicon of 38 words, each labelled with one of six topics named by strings, built
without any randomness. A sentence becomes a bag of ids, fastText's way: its words' ids (a vocabulary), then the ids
of its words' pieces (a BPE-like tokenizer: the characters, then 8 merges learned from the corpus's words). The
model is `EmbeddingBag(ids, 8, mode="mean")`, dropout (torch's global generator), a Linear head to the topics; its
forward pass takes the ids and the bags' offsets.

Each mapping is built the way people build it, and each bug builds one from a `set` of strings instead, whose order
changes from process to process (Python randomises str hashes unless PYTHONHASHSEED is set). The checkpoint holds
the embedding rows and the head's rows, not the mapping that gave each row its meaning, so a resumed process reads
the weights under another mapping:
- `vocabulary`: `list(set(words))`, not `sorted(set(words))`: each word's id, so the rows its bag averages;
- `labels`: the topics numbered by enumerating `set(topics)`, not sorted: each sentence's target, so the head row
  it trains (the model's inputs do not change);
- `merges`: the merge table learned from pair counts filled while iterating `set(words)`, not sorted: many pairs
  tie (from the third merge on), and `max` keeps the first of them in the dict's insertion order, so the merges,
  each word's pieces and their ids change.

Torch only: the protocol trainer (per_process_data.py) and the unmodified script (per_process_data_script.py)
share it.
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

import torch

BUGS = ("vocabulary", "labels", "merges")  # which mapping --bug builds from a set, in both trainers
# Six topics: two processes number them alike by chance once in 720 (3 would make it one in 6).
TOPICS = {
    "weather": ("rain", "snow", "wind", "storm", "cloud", "sunny"),
    "food": ("bread", "soup", "rice", "salad", "cheese", "sweet"),
    "sport": ("goal", "team", "match", "score", "race", "coach"),
    "music": ("song", "drum", "piano", "choir", "tune", "bass"),
    "travel": ("train", "plane", "hotel", "map", "road", "ticket"),
    "garden": ("rose", "seed", "soil", "leaf", "tree", "weed"),
}
FILLERS = ("the", "very")
MERGES = 8  # merges learned: a fixed number, so the embedding's size does not depend on them
WIDTH = 8


def sentences() -> list[tuple[list[str], str]]:
    """32 (words, topic) pairs, the topics in turn: two words of the topic, a filler between them in every other
    sentence, a word of the next topic after them in every fourth. Built, not drawn."""
    names = list(TOPICS)
    corpus = []
    for i in range(32):
        topic, j = names[i % len(names)], i // len(names)  # the j-th sentence of its topic
        own, other = TOPICS[topic], TOPICS[names[(i + 1) % len(names)]]
        words = [own[j % 6], own[(j + 2 + j // 6) % 6]]
        if i % 2:
            words.insert(1, FILLERS[i // 2 % 2])
        if i % 4 == 0:
            words.append(other[j % 6])
        corpus.append((words, topic))
    return corpus


def learn_merges(listing: Iterable[str], merges: int) -> list[tuple[str, str]]:
    """BPE's training: merge, `merges` times, the adjacent pair of symbols that most of the listed words hold. The
    counts are a dict filled in the listing's order, and `max` keeps the first of equal counts."""
    splits = {word: list(word) for word in listing}
    table: list[tuple[str, str]] = []
    for _ in range(merges):
        counts: dict[tuple[str, str], int] = {}
        for symbols in splits.values():
            for pair in itertools.pairwise(symbols):
                counts[pair] = counts.get(pair, 0) + 1
        best = max(counts, key=counts.__getitem__)
        table.append(best)
        splits = {word: apply(symbols, best) for word, symbols in splits.items()}
    return table


def apply(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """`symbols` with every occurrence of `pair`, left to right, merged into one symbol."""
    merged, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i : i + 2]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def pieces(word: str, table: list[tuple[str, str]]) -> list[str]:
    """A word's pieces: its characters with the merges applied in the order they were learned."""
    symbols = list(word)
    for pair in table:
        symbols = apply(symbols, pair)
    return symbols


@dataclass(frozen=True)
class Encoded:
    bags: list[list[int]]  # each sentence's ids: its words', then its words' pieces'
    targets: torch.Tensor  # each sentence's topic index
    rows: int  # the embedding's rows: every id is below it, whatever the mapping


def encode(bug: str | None) -> Encoded:
    """The corpus mapped to ids, correctly or with `bug`'s mapping built from a set."""
    corpus = sentences()
    words = [word for sentence, _ in corpus for word in sentence]
    vocabulary = list(set(words)) if bug == "vocabulary" else sorted(set(words))
    word_id = {word: i for i, word in enumerate(vocabulary)}
    topics = [topic for _, topic in corpus]
    topic_id = {name: i for i, name in enumerate(set(topics) if bug == "labels" else sorted(set(topics)))}
    listing = set(words) if bug == "merges" else sorted(set(words))
    table = learn_merges(listing, MERGES)
    symbols = sorted(set("".join(vocabulary))) + ["".join(pair) for pair in table]
    piece_id: dict[str, int] = {}
    for i, symbol in enumerate(symbols):  # a merge may spell a symbol again: it keeps the first id, its row unused
        piece_id.setdefault(symbol, len(vocabulary) + i)
    bags = [
        [word_id[word] for word in sentence] + [piece_id[piece] for word in sentence for piece in pieces(word, table)]
        for sentence, _ in corpus
    ]
    targets = torch.tensor([topic_id[topic] for topic in topics], dtype=torch.int64)
    return Encoded(bags, targets, len(vocabulary) + len(symbols))


def batch(data: Encoded, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ids of `rows`' bags end to end, where each bag starts in them, and their targets."""
    bags = [data.bags[row] for row in rows]
    starts = [0]
    for bag in bags[:-1]:
        starts.append(starts[-1] + len(bag))
    ids = torch.tensor([i for bag in bags for i in bag], dtype=torch.int64)
    return ids, torch.tensor(starts, dtype=torch.int64), data.targets[rows]


class BagClassifier(torch.nn.Module):
    """The mean of a bag's embedding rows, dropout, a Linear head to the topics."""

    def __init__(self, rows: int, topics: int) -> None:
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(rows, WIDTH, mode="mean")
        self.drop = torch.nn.Dropout(0.2)
        self.head = torch.nn.Linear(WIDTH, topics)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.bag(ids, offsets)))
