"""Text corpora and tokenization, with the network off."""

import socket

import numpy as np
import pytest
from icml26_core.datasets import ByteTokenizer, get_tokenizer, load_text, register_tokenizer
from icml26_core.datasets import text as text_module


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture(scope="module")
def wiki():
    return load_text("wikipedia")


def test_wikipedia_is_clean_plain_text_split_by_document(wiki):
    assert len(wiki.train) + len(wiki.validation) == wiki.meta["n_documents"] > 90
    assert len(wiki.validation) == round(0.1 * wiki.meta["n_documents"])
    assert not set(wiki.train_titles) & set(wiki.validation_titles)
    assert len(wiki.train_titles) == len(wiki.train)
    assert 2_500_000 < wiki.meta["n_chars"] < 4_000_000
    for doc in wiki.train + wiki.validation:
        assert len(doc) >= 500
        for markup in ("[[", "]]", "{{", "}}", "'''", "<ref", "=="):
            assert markup not in doc
    assert "Anarchism" in wiki.train_titles + wiki.validation_titles


def test_shakespeare_plays_as_plain_text():
    corpus = load_text("shakespeare")
    titles = corpus.train_titles + corpus.validation_titles
    assert len(titles) == 38 and "Hamlet" in titles and "Measure For Measure" in titles
    assert not set(corpus.train_titles) & set(corpus.validation_titles)
    assert 4_500_000 < corpus.meta["n_chars"] < 5_500_000
    hamlet = (corpus.train + corpus.validation)[titles.index("Hamlet")]
    assert hamlet.startswith("Hamlet\n\nACT I\n\nSCENE I. Elsinore.")
    assert "BERNARDO:\nWho's there?" in hamlet
    assert "To be, or not to be" in hamlet
    for doc in corpus.train + corpus.validation:
        for markup in ("**", "##", "\\", "_"):
            assert markup not in doc
        assert "  \n" not in doc


def test_split_depends_on_seed_and_fraction(wiki):
    other = load_text("wikipedia", seed=1, validation_fraction=0.2)
    assert other.validation_titles != wiki.validation_titles
    assert len(other.validation) == round(0.2 * other.meta["n_documents"])
    with pytest.raises(ValueError, match="validation_fraction"):
        load_text("wikipedia", validation_fraction=1.0)
    with pytest.raises(ValueError, match=r"known: .*wikipedia"):
        load_text("enwik8")


def test_byte_tokens_round_trip(wiki):
    ids = wiki.tokens("validation")
    assert ids.dtype == np.int32 and ids.min() >= 0 and ids.max() < 256
    assert ByteTokenizer().decode(ids) == wiki.text("validation")
    assert len(ids) == len(wiki.text("validation").encode("utf-8"))


class WordTokenizer:
    """A tiny real tokenizer with an end-of-sequence id, standing in for a pretrained one."""

    def __init__(self, words):
        self.vocab = {w: i + 2 for i, w in enumerate(words)}
        self.vocab_size = len(words) + 2
        self.eos_token_id = 1

    def encode(self, text):
        return [self.vocab.get(w, 0) for w in text.split()]


def test_tokenizer_object_and_registered_name(wiki, tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    tok = WordTokenizer(["the", "of", "and"])
    ids = wiki.tokens("validation", tokenizer=tok)
    n_words = sum(len(d.split()) for d in wiki.validation)
    assert len(ids) == n_words + len(wiki.validation) - 1  # one eos between documents
    assert (ids == 1).sum() == len(wiki.validation) - 1
    assert (ids == 2).sum() == sum(d.split().count("the") for d in wiki.validation)

    monkeypatch.setattr(text_module, "_TOKENIZERS", dict(text_module._TOKENIZERS))
    monkeypatch.setattr(text_module, "_TOKENIZER_CACHE", {})
    register_tokenizer("words-test", lambda: tok)
    assert get_tokenizer("words-test") is tok
    np.testing.assert_array_equal(wiki.tokens("validation", tokenizer="words-test"), ids)
    assert list(tmp_path.joinpath("datasets").glob("text-wikipedia-validation-words-test*"))


def test_tokenizer_errors(wiki):
    with pytest.raises(ValueError, match=r"unknown tokenizer 'gpt9'.*bytes"):
        wiki.tokens("train", tokenizer="gpt9")
    with pytest.raises(TypeError, match="encode method"):
        wiki.tokens("train", tokenizer=42)
    with pytest.raises(ValueError, match="split must be"):
        wiki.tokens("test")
    with pytest.raises(ValueError, match="reserved"):
        register_tokenizer("bytes", ByteTokenizer)
    with pytest.raises(ValueError, match=r"ids must be in \[0, 255\]"):
        ByteTokenizer().decode([300])
