"""PySide6 desktop app: windows, Qt models and workers. Calls curator.core, never SQL."""
