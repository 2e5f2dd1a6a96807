"""Headless core: never imports PySide6, click, curator.cli or curator.gui."""
