"""Answer-first generation: the reference answer is a sentence of the chunk, the model writes only
the question that sentence answers.

Why: asked for a question *and* an answer about a whole passage, the bundled 135M model wrote rows
a reviewer kept about one time in sixteen (bench/quality.py, issue 14): answers that restate the
question, are cut off, or say something the chunk does not. Reversing the order removes the
answer's failure modes by construction (the reference is the chunk's own words, so it is correct
for its gold chunk and says something), and leaves the model the easier half of the task: turning
one statement into the question it answers, shown three worked examples (prompts.ANSWER_FIRST_SHOTS).
This is answer-aware question generation, as in SQuAD-style QG.

The question is checked against its answer sentence by the generating model's own likelihood
(AnswerLikelihood below), not by an embedder. A MiniLM cosine floor (0.65) did it until issue 27:
MiniLM is the dense retriever under test, so the floor kept the questions dense finds, and it was
most of the rejections. On 53 answer-first rows generated with no check and labelled by the rubric,
the likelihood floor would have rejected 18 of the 38 unusable rows and 1 of the 15 usable ones
(bench/quality.py --answer-check; docs/benchmarks.md, "Answer check"); on a fresh run with it the
usable share was no higher (28%), so it mainly keeps the reviewer's queue and the run fast.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

# A sentence ends at . ! ? followed by space and a capital, a quote, a backtick or a digit, except
# after an abbreviation ("e.g. \u201c2.2+\u201d" cut a reference answer in two in the quality bench).
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<=[.!?])\s+(?=[A-Z\"'`\u201c0-9])")
_BLOCK = re.compile(r"\n\s*\n")
MIN_WORDS, MAX_WORDS = 8, 40
# A sentence opening with one of these leans on the one before it ("However, ...", "Yes, ..."), so
# as a reference answer it would not stand alone ("This ...", "It ..." are caught by the sets below).
LEANING_OPENERS = {"its", "however", "but", "so", "and", "or", "see", "note", "thus", "therefore", "hence",
                   "similarly", "otherwise", "instead", "again", "both", "he", "she", "we", "finally", "first",
                   "second", "next", "likewise", "yet", "still", "yes", "no", "probably", "often", "even",
                   "several", "many", "some", "other", "another", "once"}
# Words that point back at text the answer does not hold ("this defines", "merge them", "is then
# used", "the same approach", "also requires"): from the quality bench's labelled answer sentences,
# where such sentences made rows a reviewer rejected.
LEANING_WORDS = {"this", "these", "those", "them", "then", "also", "same", "such", "above", "below",
                 "following", "former", "latter", "either"}
# These lean back only near the start ("... prior to it are positional-only" refers inside the sentence).
LEANING_NEAR_START = {"that", "it", "they", "here", "there"}
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |#|[-*+|]\s|\d+[.)]\s|```|    )")


def answer_sentences(text: str) -> list[str]:
    """Sentences of a chunk that can serve as a reference answer on their own: prose (not code,
    lists or headings), 8-40 words, a full sentence that does not lean on the one before it."""
    found = []
    for block in _BLOCK.split(text or ""):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or any(_CODE_LINE.match(line) for line in lines):
            continue
        for sentence in _SENTENCE_END.split(" ".join(" ".join(lines).split())):
            if _is_answer_like(sentence):
                found.append(sentence)
    return found


def _is_answer_like(sentence: str) -> bool:
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not sentence.endswith(".") or not sentence[0].isupper():
        return False
    if sentence.rstrip(".").endswith((":", ";", ",")) or "?" in sentence:
        return False
    if any(w.endswith(":") for w in words[:3]):  # a label ("Answer 1: ...", "Note: ..."), not prose
        return False
    # "That\u2019s because", "like this.": each word without punctuation or a contraction's tail.
    bare = [re.split(r"[\u2019']", w.lower().strip(",;:.()\"\u201c\u201d"))[0] for w in words]
    if bare[0] in LEANING_OPENERS or LEANING_WORDS & set(bare) or LEANING_NEAR_START & set(bare[:4]):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.7 * len(sentence.replace(" ", ""))  # code and tables spell few letters


# Sentences that open on an example, a hedge or a pointer elsewhere ("For example, someone could
# pass ...", "Sometimes you'll be tempted ...", "Refer to the reference documentation ...") state no
# fact a user asks for; in the labelled rows of issue 27 the small model asked about something else
# for them. They are asked about last, after every sentence that states a fact of its own.
WEAK_OPENERS = ("for example", "for instance", "in general", "in most", "in situations", "in the case", "as with",
                "sometimes", "later", "please", "refer", "consult", "without", "when", "with ")
POINTERS = re.compile(r"\b(refer to|described in|more information|manual page|see the|documentation on)\b", re.I)


def ranked_answer_sentences(chunk: dict) -> list[str]:
    """The chunk's answer sentences, the likeliest to make a usable row first: sentences that state a
    fact of their own before examples, hedges and pointers; among those, the ones that name the
    chunk's heading (what the section is about) first, then in the chunk's order, since its opening
    sentences state its point. On the 270 labelled answer-first rows of the quality and validity
    benches (bench/quality_labels.jsonl), rows from the first two sentences were usable 40%, from
    the third on 26%; from sentences naming two words of the heading 64%, the rest 37%."""
    sentences = answer_sentences(chunk["text"])
    heading = _content(str(chunk.get("title") or "").split(">")[-1])

    def rank(item: tuple[int, str]) -> tuple[int, int, int]:
        position, sentence = item
        weak = sentence.lower().startswith(WEAK_OPENERS) or bool(POINTERS.search(sentence))
        names_heading = len(heading & _content(sentence)) >= 2
        return (weak, not names_heading, position)

    return [sentence for _, sentence in sorted(enumerate(sentences), key=rank)]


def _content(text: str) -> set[str]:
    from curator.core.queries.words import stems

    return stems(text)


def pick_answer(chunk: dict, attempt: int, skip: Optional[Callable[[str], bool]] = None) -> Optional[str]:
    """The answer sentence of a chunk for a given attempt: the best sentence first
    (ranked_answer_sentences), and a retry asks about the next one (a new question, not the same
    failure again); sentences ``skip`` says yes to are never asked about. The order is not seeded: a
    seeded shuffle picked the third or later sentence as often as the first, and those rows were
    usable less often."""
    sentences = [s for s in ranked_answer_sentences(chunk) if not (skip and skip(s))]
    if not sentences:
        return None
    return sentences[attempt % len(sentences)]


# Nats per answer token a question must add to the model's likelihood of its answer sentence; set on
# labelled rows (bench/quality.py --answer-check; docs/benchmarks.md, "Answer check").
MIN_ANSWER_GAIN = 0.2


class AnswerLikelihood:
    """How much a question raises the generating model's own likelihood of its answer sentence: the
    mean log-probability per answer token after "Question: q / Answer:", minus the same after a
    question that says nothing (UPR, Sachan et al. 2022, read the other way: pointwise mutual
    information of question and answer under the language model). The baseline is a question, not
    "Answer:" alone: against that, the question-and-answer frame by itself raised the likelihood, and
    an off-topic question ("How do I install Python on Windows?" for an answer about signal handlers)
    gained 0.69 nats a token, against 0.07 with the neutral question. A question about something else does not help
    the model predict the answer; one that only copies the answer's words helps it a lot, so the
    gain also has a ceiling worth reading, but it is no retriever: neither BM25's term statistics
    nor MiniLM's vectors, so it favours no retriever under test (issue 27).

    Prompt evaluation only (no decoding): one pass over about 60 tokens per question, plus one per
    answer sentence (cached). Given the generating backend (``backend``, a LlamaCppBackend), the
    passes run on its batch decoder's context, between its decode steps, with logits kept only at
    the answer's positions; else (a bench scoring stored rows) it loads ``model_path`` itself with
    every position's logits kept, on ``n_threads`` threads. Both give the same gains (to 1e-3); the
    first needs no second copy of the model in memory (issue 33; docs/generate.md, "Where an
    answer-first row's time goes").
    """

    N_CTX = 512
    NEUTRAL_QUESTION = "What does the documentation say?"

    def __init__(self, model_path=None, n_threads: int = 1, backend=None):
        if model_path is None and backend is None:
            raise ValueError("AnswerLikelihood needs a model file or the backend that generates")
        self.backend = backend
        self.model_path = str(model_path if model_path is not None else backend.model_path)
        self.n_threads = n_threads
        self._llm = None
        self._baselines: dict[str, float] = {}

    def _model(self):
        if self.backend is not None:
            return self.backend.llm  # its tokenizer; the passes go through backend.score
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(model_path=self.model_path, n_ctx=self.N_CTX, n_threads=self.n_threads,
                              n_threads_batch=self.n_threads, logits_all=True, verbose=False)
        return self._llm

    def _mean_logprob(self, prefix: str, answer: str) -> float:
        """Mean log-probability of the answer's tokens after ``prefix``."""
        import numpy as np

        llm = self._model()
        head = llm.tokenize(prefix.encode(), add_bos=True, special=False)
        tail = llm.tokenize((" " + answer).encode(), add_bos=False, special=False)
        tokens = (head + tail)[: self.N_CTX]
        tail = tokens[len(head):]
        if self.backend is not None:
            return float(np.mean(self.backend.score(tokens, len(head))))
        llm.reset()
        llm.eval(tokens)
        logits = np.asarray(llm.scores[len(head) - 1: len(tokens) - 1], dtype=np.float64)  # row i predicts tail[i]
        return float(token_logprobs(logits, tail).mean())

    def gain(self, question: str, answer: str) -> float:
        """Nats per answer token the question adds (0: it says nothing about the answer)."""
        if answer not in self._baselines:
            self._baselines[answer] = self._mean_logprob(self._prefix(self.NEUTRAL_QUESTION), answer)
        return self._mean_logprob(self._prefix(question), answer) - self._baselines[answer]

    @staticmethod
    def _prefix(question: str) -> str:
        return f"Question: {question}\nAnswer:"

    def describe(self) -> str:
        return f"answer likelihood gain under {self.model_path.rsplit('/', 1)[-1]}"


def token_logprobs(logits, targets):
    """Log-probability of each target token under its row of logits (row i predicts targets[i]): a
    log-softmax computed stably (the row's peak taken out before exponentiating)."""
    import numpy as np

    peak = logits.max(axis=1, keepdims=True)
    log_norm = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=1))
    return logits[np.arange(len(targets)), targets] - log_norm
