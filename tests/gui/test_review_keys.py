"""The Review tab's one key table: every key in it is dispatched and listed (hint line, help overlay,
buttons, F1 page), and no key outside it does anything."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication

from curator.core.corpus import documents
from curator.core.queries.rows import add_query
from curator.core.store import open_project
from curator.gui import review_keys
from curator.gui.review_keys import KEYS
from curator.gui.review_view import ReviewView
from curator.gui.window import shortcuts_text

METHODS = sorted({key.call[0] for key in KEYS})
MODIFIER_SETS = (Qt.NoModifier, Qt.ShiftModifier, Qt.ControlModifier, Qt.ControlModifier | Qt.ShiftModifier,
                 Qt.AltModifier, Qt.MetaModifier)
# Every printable key and the usual special ones: what a reviewer could press by accident.
ALL_KEYS = sorted({*range(Qt.Key_Space.value, Qt.Key_AsciiTilde.value + 1),
                   *(k.value for k in (Qt.Key_Return, Qt.Key_Enter, Qt.Key_Escape, Qt.Key_Tab, Qt.Key_Backspace,
                                       Qt.Key_Delete, Qt.Key_Insert, Qt.Key_Up, Qt.Key_Down, Qt.Key_Left,
                                       Qt.Key_Right, Qt.Key_Home, Qt.Key_End, Qt.Key_PageUp, Qt.Key_PageDown)),
                   *range(Qt.Key_F1.value, Qt.Key_F12.value + 1)})
FOCUS_KEYS = {Qt.Key_Tab.value}  # Qt's own focus chain takes Tab; the view still does nothing with it


@pytest.fixture
def view(qtbot, sample_project_path):
    """A review view on a pending row, each method a key can call replaced by a recorder."""
    db = open_project(sample_project_path)
    chunk = documents.list_chunks(db)[0]["id"]
    with db.conn:
        add_query(db, "what does sync do offline?", "synthetic", query_type="factoid", gold_chunk_ids=[chunk])
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    assert view.current is not None
    view.calls = []
    for name in METHODS:
        setattr(view, name, lambda *args, _n=name: view.calls.append((_n, *args)))
    yield view
    db.close()


def _press(widget, key: int, mods) -> QKeyEvent:
    event = QKeyEvent(QEvent.KeyPress, key, mods)
    QApplication.sendEvent(widget, event)
    return event


def _mods(value: int):
    return Qt.KeyboardModifier(value)


def test_every_key_in_the_table_is_dispatched(view):
    for key in KEYS:
        target = view.question if key.scope == "edit" else view
        view.editing = key.scope == "edit"
        for code, mods, args in key.presses:
            view.calls.clear()
            event = _press(target, code, mods)
            assert view.calls == [(*key.call, *args)], (key.label, code, mods)
            assert key.scope == "edit" or event.isAccepted(), key.label


def test_no_key_outside_the_table_does_anything(view):
    handled = {(review_keys._code(code), review_keys._code(mods)) for key in KEYS if key.scope != "edit"
               for code, mods, _ in key.presses}
    tried = 0
    for code, mods in itertools.product(ALL_KEYS, MODIFIER_SETS):
        if (code, review_keys._code(mods)) in handled:
            continue
        view.calls.clear()
        event = _press(view, code, mods)
        assert view.calls == [] and (not event.isAccepted() or code in FOCUS_KEYS), (hex(code), mods)
        tried += 1
    assert tried > 500


def test_while_editing_only_the_edit_keys_act_and_typing_goes_to_the_box(view):
    view.editing = True
    view.question.setReadOnly(False)
    for code in (Qt.Key_A, Qt.Key_X, Qt.Key_1, Qt.Key_Space):
        _press(view.question, code, Qt.NoModifier)
    assert view.calls == []
    _press(view.question, Qt.Key_Return, Qt.ControlModifier)
    _press(view.reference, Qt.Key_Escape, Qt.NoModifier)
    assert view.calls == [("save_edit",), ("cancel_edit",)]


def test_row_keys_do_nothing_without_a_row_but_help_and_undo_still_work(view):
    view.current = None
    for key in KEYS:
        if key.scope == "edit":
            continue
        view.calls.clear()
        code, mods, args = key.presses[0]
        _press(view, code, mods)
        assert view.calls == ([] if key.scope == "row" else [(*key.call, *args)]), key.label


def test_hint_line_overlay_buttons_and_f1_page_come_from_the_table(view):
    hint, overlay, f1 = view.keys_hint.text(), view.help.text(), shortcuts_text()
    assert hint == review_keys.hint_line()
    for key in KEYS:
        assert key.label in overlay and key.help in overlay, key.label
        assert key.label in f1 and key.help in f1, key.label
        if key.hint:
            assert f"{key.label} {key.hint}" in hint
    # the suggestions' title names their keys from the table too
    assert "1-5 take a suggestion" in view.suggestions.title.text()
    captions = {b.text() for b in view.buttons.values()}
    assert captions == {review_keys.button_caption(k) for k in KEYS if k.button}
    for key in review_keys.buttons():
        view.calls.clear()
        view.buttons[key.button.rstrip("…").lower()].click()
        assert view.calls == [key.call], key.label


def test_the_real_help_key_opens_the_overlay_and_any_key_closes_it(qtbot, sample_project_path):
    db = open_project(sample_project_path)
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.show()
    qtbot.keyClick(view, Qt.Key_Question)
    assert view.help.isVisible()
    qtbot.keyClick(view.help, Qt.Key_A)  # closes the help; approves nothing
    assert not view.help.isVisible()
    view.close()
    db.close()
