"""Start a QGuiApplication and print its platform name: `curator doctor` runs this module in a
child process (``python -m curator.gui.qt_probe``), so a broken Qt fails one check and the
headless core never holds Qt code."""

from PySide6.QtGui import QGuiApplication

if __name__ == "__main__":
    app = QGuiApplication([])
    print(app.platformName())
