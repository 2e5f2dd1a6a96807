"""Claims without an LLM: sentences, then coordinated clauses with their own subject, each with its rule."""

from __future__ import annotations

from curator.core.diagnosis.claims import explain_split, split_claims, split_statements


def test_a_clause_with_its_own_subject_is_its_own_claim():
    text = "list.sort() sorts the list in place, and it does not return the sorted list."
    assert split_claims(text) == ["list.sort() sorts the list in place", "it does not return the sorted list."]
    rules = [c["rule"] for c in explain_split(text)[0]["claims"]]
    assert rules == ["sentence", "clause: 'and'"]


def test_a_coordinated_list_stays_one_claim():
    assert split_claims("Tea and coffee are sold in the shop downstairs.") == [
        "Tea and coffee are sold in the shop downstairs."]
    # "and returns it" has no subject of its own: cutting it off would make a claim about nothing
    assert split_claims("The function creates a new list and returns it to the caller.") == [
        "The function creates a new list and returns it to the caller."]


def test_semicolons_and_but_cut_clauses_and_questions_are_shown_but_not_claims():
    text = "Pinning works with apt; the hold is kept across upgrades. Why? The stable release is safe, but the sid branch is not safe at all."
    split = explain_split(text)
    assert [c["text"] for c in split[0]["claims"]] == ["Pinning works with apt", "the hold is kept across upgrades."]
    assert split[0]["claims"][0]["rule"] == "clause: ';'"
    assert split[1] == {"sentence": "Why?", "question": True, "claims": []}
    assert split_claims(text)[2:] == ["The stable release is safe", "the sid branch is not safe at all."]


def test_short_pieces_are_listed_as_too_short_and_left_out():
    split = explain_split("Yes. It is used widely!")
    assert split[0]["claims"] == [{"text": "Yes.", "rule": "too short"}]
    assert split_claims("Yes. It is used widely!") == ["It is used widely!"]


def test_a_short_reference_answer_is_one_statement():
    assert split_statements("Use pip.") == ["Use pip."]
    assert split_statements("") == []
