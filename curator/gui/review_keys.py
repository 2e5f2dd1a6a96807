"""The Review tab's keys in one table. The hint line, the help overlay (?), the decision buttons,
the F1 page and the key dispatch are all made from ``KEYS``, so they cannot disagree: a key
added here is dispatched, listed and (if it has a caption) given a button; a key not here does
nothing.

Each entry names the ReviewView method it calls (with fixed arguments); a press may add its own
arguments (which suggestion, whether to cycle its grade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from curator.core.store.gold import GOLD_GRADES, GRADES, HIGHLY_RELEVANT, NOT_RELEVANT, RELEVANT, grade_name
from curator.gui.widgets import plain_label

NONE, SHIFT, CTRL = Qt.NoModifier, Qt.ShiftModifier, Qt.ControlModifier
# Modifiers that tell keys apart; keypad and group-switch flags are ignored, Alt and Meta are not,
# so Alt+A (a menu mnemonic) never approves.
_MODIFIERS = Qt.ShiftModifier | Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier
# Shift+1..5 arrive as these keys on a US layout; offscreen tests send Key_1..5 with Shift.
_SHIFTED_DIGITS = (Qt.Key_Exclam, Qt.Key_At, Qt.Key_NumberSign, Qt.Key_Dollar, Qt.Key_Percent)

Press = tuple[int, object, tuple]  # (Qt key, modifiers, extra arguments)


def _code(value) -> int:
    """A Qt key or modifier flag as an int (PySide6 enums are Python enums, not ints)."""
    return value if isinstance(value, int) else value.value


@dataclass(frozen=True)
class Key:
    label: str  # how the key is written everywhere: "A", "Space / S", "Shift+1-5"
    call: tuple  # (ReviewView method, *fixed arguments)
    help: str  # one line in the overlay and on the F1 page
    presses: tuple[Press, ...]
    hint: str = ""  # its word in the hint line ("" = overlay and F1 only)
    button: str = ""  # caption of its button ("" = no button)
    scope: str = "row"  # "row": needs a row shown; "view": always; "edit": while an edit box has focus


def _plain(*keys: int, mods=NONE) -> tuple[Press, ...]:
    return tuple((key, mods, ()) for key in keys)


def _digits(shifted: bool) -> tuple[Press, ...]:
    presses = [(Qt.Key_0 + n, SHIFT if shifted else NONE, (n, shifted)) for n in range(1, 6)]
    if shifted:  # the layout's shifted symbol, with or without the Shift flag
        presses += [(key, mods, (n, True)) for n, key in enumerate(_SHIFTED_DIGITS, 1) for mods in (SHIFT, NONE)]
    return tuple(presses)


KEYS: tuple[Key, ...] = (
    Key("A", ("decide", "approve"), "approve: the gold chunk(s) answer it and the reference is right",
        _plain(Qt.Key_A), hint="approve", button="Approve"),
    Key("X", ("decide", "reject"), "reject: nonsense or a duplicate", _plain(Qt.Key_X), hint="reject", button="Reject"),
    Key("U", ("decide", "unanswerable"), "unanswerable: the corpus does not answer it", _plain(Qt.Key_U),
        hint="unanswerable", button="Unanswerable"),
    Key("E", ("start_edit",), "edit the question and the reference answer", _plain(Qt.Key_E), hint="edit"),
    Key("Ctrl+Enter", ("save_edit",), "save the edit", _plain(Qt.Key_Return, Qt.Key_Enter, mods=CTRL),
        scope="edit"),
    Key("Esc", ("cancel_edit",), "cancel the edit", _plain(Qt.Key_Escape), scope="edit"),
    Key("Space / S", ("skip",), "skip: come back to it after the rest", _plain(Qt.Key_Space, Qt.Key_S),
        hint="skip", button="Skip"),
    Key("1-5", ("toggle_suggestion",), "take suggestion 1-5 as gold, or drop it again", _digits(False),
        hint="take a suggestion"),
    Key("Shift+1-5", ("toggle_suggestion",),
        "cycle that suggestion's grade: " + " -> ".join(grade_name(g) for g in GOLD_GRADES) + " -> ...",
        _digits(True), hint="its grade"),
    Key("J / ↓", ("move_pool", 1), "mark the next pooled result (the retrievers' top results to grade)",
        _plain(Qt.Key_J, Qt.Key_Down), hint="next pooled"),
    Key("K / ↑", ("move_pool", -1), "mark the previous pooled result", _plain(Qt.Key_K, Qt.Key_Up),
        hint="previous"),
    Key("R", ("grade_pooled", RELEVANT), f"grade the marked pooled result {GRADES[RELEVANT]}: it becomes gold "
        f"(grade {RELEVANT})", _plain(Qt.Key_R), hint=GRADES[RELEVANT]),
    Key("H", ("grade_pooled", HIGHLY_RELEVANT), f"grade it {GRADES[HIGHLY_RELEVANT]}: gold, grade {HIGHLY_RELEVANT}",
        _plain(Qt.Key_H), hint=GRADES[HIGHLY_RELEVANT]),
    Key("0", ("grade_pooled", NOT_RELEVANT), f"grade it {GRADES[NOT_RELEVANT]} (grade {NOT_RELEVANT}): not offered "
        "for this row again", _plain(Qt.Key_0), hint=GRADES[NOT_RELEVANT]),
    Key("G", ("open_gold_dialog",), "search the corpus for gold chunks", _plain(Qt.Key_G), hint="gold",
        button="Gold…"),
    Key("N", ("open_note_dialog",), "write a note on the row", _plain(Qt.Key_N), hint="note"),
    Key("Ctrl+Z", ("undo",), "undo the last decision (also after a restart)", _plain(Qt.Key_Z, mods=CTRL),
        hint="undo", scope="view"),
    Key("Ctrl+Shift+Z", ("redo",), "redo", _plain(Qt.Key_Z, mods=CTRL | SHIFT), scope="view"),
    Key("?", ("show_help",), "this help (any key closes it)",
        _plain(Qt.Key_Question) + _plain(Qt.Key_Question, mods=SHIFT), hint="help", scope="view"),
)


def _press_table(scopes: tuple[str, ...]) -> dict[tuple[int, int], tuple[Key, tuple]]:
    table = {}
    for key in KEYS:
        if key.scope in scopes:
            for code, mods, args in key.presses:
                table[(_code(code), _code(mods))] = (key, args)
    return table


_VIEW_PRESSES = _press_table(("row", "view"))
_EDIT_PRESSES = _press_table(("edit",))


def lookup(key: int, modifiers, editing: bool = False) -> Optional[tuple[Key, tuple]]:
    """The table entry a key press calls (and the press's own arguments), or None."""
    table = _EDIT_PRESSES if editing else _VIEW_PRESSES
    return table.get((_code(key), _code(modifiers & _MODIFIERS)))


def call(view: object, key: Key, args: tuple = ()) -> None:
    method, *fixed = key.call
    getattr(view, method)(*fixed, *args)


def hint_line() -> str:
    """'A approve · X reject · ...' under the row."""
    return " · ".join(f"{k.label} {k.hint}" for k in KEYS if k.hint)


def suggestions_hint() -> str:
    """What the suggestions' keys do, for the title above them."""
    return " · ".join(f"{k.label} {k.hint}" for k in KEYS if k.call[0] in ("toggle_suggestion", "open_gold_dialog"))


def pool_hint() -> str:
    """What the pooled results' keys do, for the title above them."""
    return " · ".join(f"{k.label} {k.hint}" for k in KEYS if k.call[0] in ("move_pool", "grade_pooled"))


def help_rows() -> list[tuple[str, str]]:
    """(key, what it does) for the overlay and the F1 page."""
    return [(k.label, k.help) for k in KEYS]


def buttons() -> list[Key]:
    return [k for k in KEYS if k.button]


def button_caption(key: Key) -> str:
    return f"{key.button} ({key.label.split(' / ')[0]})"


class HelpOverlay(QFrame):
    """A translucent panel over the view listing every key; any key closes it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("helpOverlay")
        self.setFocusPolicy(Qt.StrongFocus)
        layout = QVBoxLayout(self)
        layout.addWidget(plain_label("Keyboard", bold=True))
        for label, what in help_rows():
            layout.addWidget(plain_label(f"{label:<14} {what}"))
        layout.addStretch(1)
        self.hide()

    def text(self) -> str:
        return "\n".join(label.text() for label in self.findChildren(QLabel))

    def show_over(self) -> None:
        self.setGeometry(self.parentWidget().rect().adjusted(60, 40, -60, -40))
        self.raise_()
        self.show()
        self.setFocus()

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        self.hide()
        self.parentWidget().setFocus()


class EditBoxKeys(QObject):
    """The table's edit keys (save, cancel) while an edit box has focus; every other key types."""

    def __init__(self, view: object) -> None:
        super().__init__()
        self.view = view

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's naming)
        if event.type() != QEvent.KeyPress:
            return False
        found = lookup(event.key(), event.modifiers(), editing=True)
        if found is None:
            return False
        call(self.view, *found)
        return True


def dispatch(view, event, has_row: bool, fallback: Callable[[object], None]) -> None:
    """The view's keyPressEvent: the table's entry for the press, else ``fallback`` (Qt's own,
    which leaves the event unaccepted so it travels on)."""
    found = lookup(event.key(), event.modifiers())
    if found is None or (found[0].scope == "row" and not has_row):
        return fallback(event)
    call(view, *found)
    event.accept()
